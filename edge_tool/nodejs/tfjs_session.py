"""A TFJS graph model run by tfjs in Node (wasm backend, cpu as fallback), through tfjs_run.js: a session fed
batch by batch."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.errors import DataError, ModelError, UsageError, collect_and_raise
from edge_tool.litert.isolated import WorkerProcess, scratch_dir

SCRIPT = Path(__file__).with_name("tfjs_run.js")
SETUP_HINT = ".venv/bin/python scripts/vendor_runtimes.py (npm ci in web_demo/, copies @tensorflow/tfjs 4.22.0 to web_demo/vendor/tf.min.js)"
_DT = {
    "DT_FLOAT": "float32",
    "DT_INT32": "int32",
    "DT_INT64": "int32",
    "DT_UINT8": "int32",
    "DT_INT8": "int32",
    "DT_INT16": "int32",
    "DT_BOOL": "bool",
}


def tfjs_bundle_path() -> Path:
    """tf.min.js (UMD, require-able in Node): $EDGETOOL_TFJS_BUNDLE, web_demo/vendor/, web_demo/node_modules/."""
    root = web_demo_dir()
    candidates = [root / "vendor" / "tf.min.js", root / "node_modules" / "@tensorflow" / "tfjs" / "dist" / "tf.min.js"]
    env = os.environ.get("EDGETOOL_TFJS_BUNDLE")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if c.is_file():
            return c
    raise UsageError(
        "Evaluating a TFJS model needs the tfjs runtime for Node, but no tf.min.js was found (looked in "
        f"{', '.join(str(c) for c in candidates)}). Set it up with: {SETUP_HINT}; or point EDGETOOL_TFJS_BUNDLE "
        "at a tf.min.js."
    )


def wasm_backend_dir() -> Path:
    """The directory holding tf-backend-wasm.min.js and its .wasm files (web_demo/vendor, or node_modules)."""
    bundle, root = tfjs_bundle_path(), web_demo_dir()
    candidates = [bundle.parent, root / "vendor", root / "node_modules" / "@tensorflow" / "tfjs-backend-wasm" / "dist"]
    for c in candidates:
        if (c / "tf-backend-wasm.min.js").is_file() and (c / "tfjs-backend-wasm.wasm").is_file():
            return c
    raise UsageError(
        "Evaluating a TFJS model runs it on tfjs's wasm backend (what the demo page uses), but "
        f"tf-backend-wasm.min.js with its .wasm files was not found (looked in {', '.join(map(str, candidates))}). "
        f"Set it up with: {SETUP_HINT}."
    )


def node_binary() -> str:
    """The node executable; UsageError naming what to install if it is missing."""
    node = shutil.which("node")
    if node is None:
        raise UsageError("Evaluating a TFJS model needs Node.js (node on PATH, version >= 18); install it first.")
    return node


@dataclass(frozen=True)
class TfjsRun:
    """What one Node run gives: outputs by signature name, raw per-inference times (ms), tfjs version."""

    outputs: dict
    latency_ms: tuple[float, ...]
    version: str


def signature_inputs(model_json: Path) -> list[TensorSpec]:
    """The graph model's signature inputs (name, dtype tfjs will use, shape) from model.json."""
    doc = json.loads(Path(model_json).read_text())
    specs = []
    try:
        for name, t in sorted((doc.get("signature") or {}).get("inputs", {}).items()):
            dims = t.get("tensorShape", {}).get("dim", [])
            shape = tuple(None if int(d.get("size", -1)) < 0 else int(d["size"]) for d in dims)
            specs.append(TensorSpec(str(name), _DT.get(t.get("dtype"), "float32"), shape))
    except (AttributeError, TypeError, ValueError) as exc:  # hostile or hand-edited JSON: wrong types
        raise ModelError(
            f"{model_json} has a malformed signature ({type(exc).__name__}: {exc}); expected "
            "inputs mapping names to {dtype, tensorShape: {dim: [{size}]}}."
        ) from None
    return specs


_OUT_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.uint8}


class TfjsSession:
    """One Node process holding the loaded graph model; batches go in and come back one at a time.

    ``backend`` is "wasm" (what the demo page runs; the vendored tf-backend-wasm.min.js and .wasm files, SIMD
    where Node supports it) or "cpu". Graphs with control flow (LSTM/GRU loops) run with executeAsync. Inputs and
    outputs travel through small binary files in a private temp dir (one batch at a time), requests and answers
    as JSON lines, so memory on both sides stays O(batch). A failure of the model in tfjs raises RuntimeFailure
    with tfjs's one-line message. Use as a context manager (the process and temp dir go away on exit).
    """

    def __init__(self, model_json: Path, backend: str = "wasm"):
        self.model_json = Path(model_json)
        self.backend = backend
        self.specs = signature_inputs(self.model_json)
        self._dtypes = {s.name: s.dtype for s in self.specs}
        self._chunked: dict | None = None  # outputs of a fixed-batch graph, run chunk by chunk in submit
        bundle, node = tfjs_bundle_path(), node_binary()
        self._tmp = scratch_dir("edgetool-tfjs-")
        self._dir = Path(self._tmp.name)
        argv = [node, str(SCRIPT), str(bundle), str(self.model_json), backend]
        if backend == "wasm":
            argv.append(str(wasm_backend_dir()))
        self._proc = WorkerProcess(argv, "tfjs (Node)", self._dir)
        self.version = f"tfjs ({backend} backend, Node)"
        self._ready = False
        self._checked = False

    def __enter__(self) -> TfjsSession:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(abort=exc_type is not None)

    def close(self, abort: bool = False) -> None:
        """Stop the Node process (at once when ``abort``: an error or a signal is unwinding); delete the temp files."""
        self._proc.close(abort)
        self._tmp.cleanup()

    def _ensure_ready(self) -> None:
        if not self._ready:
            ready = self._proc.receive()
            self._ready = True
            self.version = f"tfjs {ready['tfjs_version']} ({ready['backend']} backend, Node)"

    def _ask(self, request: dict) -> dict:
        self._ensure_ready()
        return self._proc.ask(request)

    def check_inputs(self, inputs: dict) -> None:
        """DataError naming every mismatch between the data's inputs and the model's signature."""
        problems = []
        if self.specs and set(inputs) != {s.name for s in self.specs}:
            problems.append(
                f"{self.model_json} takes inputs {[s.name for s in self.specs]}, the data provides {sorted(inputs)}"
            )
        for s in self.specs:
            if s.name not in inputs or not s.shape:
                continue
            want, got = s.shape[1:], inputs[s.name].shape[1:]
            if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got)):
                problems.append(
                    f"input {s.name!r}: data per-sample shape {inputs[s.name].shape[1:]}, "
                    f"{self.model_json.parent.name} expects {s.shape[1:]}"
                )
        collect_and_raise(problems, DataError, f"Eval data does not fit {self.model_json}:")

    def _write_inputs(self, inputs: dict, tag: str) -> dict:
        files = {}
        for i, (name, x) in enumerate(inputs.items()):
            dtype = self._dtypes.get(name, "float32")
            arr = np.ascontiguousarray(x, dtype=np.uint8 if dtype == "bool" else dtype)
            f = self._dir / f"{tag}{i}.bin"
            arr.tofile(f)
            files[name] = {"file": str(f), "dtype": dtype, "shape": list(arr.shape)}
        return files

    def submit(self, inputs: dict) -> None:
        """Send one batch (batch-first arrays); ``collect`` returns its outputs. A graph whose signature fixes the
        batch (a model traced at batch 1, NMS inside) is run in chunks of that size, the last one padded."""
        if not self._checked:
            self.check_inputs(inputs)
            self._checked = True
        self._ensure_ready()
        fixed = {s.shape[0] for s in self.specs if s.shape and s.shape[0] is not None}
        n = len(next(iter(inputs.values())))
        if len(fixed) == 1 and (step := fixed.pop()) != n:
            parts: dict[str, list] = {}
            for start in range(0, n, step):
                chunk = {k: _padded(v[start : start + step], step) for k, v in inputs.items()}
                self._proc.send({"op": "predict", "inputs": self._write_inputs(chunk, "in"), "out_dir": str(self._dir)})
                for k, v in self._receive().items():
                    parts.setdefault(k, []).append(v[: min(step, n - start)])
            self._chunked = {k: np.concatenate(v) for k, v in parts.items()}
            return
        self._proc.send({"op": "predict", "inputs": self._write_inputs(inputs, "in"), "out_dir": str(self._dir)})

    def collect(self) -> dict[str, np.ndarray]:
        """Outputs (float64) by signature name of the batch sent last."""
        done, self._chunked = self._chunked, None
        return done if done is not None else self._receive()

    def _receive(self) -> dict[str, np.ndarray]:
        doc = self._proc.receive()
        return {
            k: np.fromfile(v["file"], dtype=_OUT_DTYPES.get(v["dtype"], np.float32))
            .astype(np.float64)
            .reshape(v["shape"])
            for k, v in doc["outputs"].items()
        }

    def predict(self, inputs: dict) -> dict[str, np.ndarray]:
        """Outputs (float64) by signature name for one batch of inputs (batch-first arrays)."""
        self.submit(inputs)
        return self.collect()

    def latency(self, sample: dict, warmup: int, runs: int | None, time_budget_s: float | None) -> tuple[float, ...]:
        """Per-call milliseconds of batch-1 execute + dataSync on ``sample`` (warm-up calls untimed)."""
        doc = self._ask(
            {
                "op": "latency",
                "inputs": self._write_inputs(sample, "lat"),
                "warmup": warmup,
                "runs": runs or 0,
                "time_budget_s": time_budget_s,
            }
        )
        return tuple(doc["latency_ms"])


def run_tfjs(
    model_json: Path,
    inputs: dict,
    warmup: int,
    runs: int | None,
    time_budget_s: float | None = None,
    batch: int = 64,
    backend: str = "wasm",
) -> TfjsRun:
    """Run every sample of in-memory ``inputs`` through the model, ``batch`` at a time, then time batch-1 calls."""
    n = len(next(iter(inputs.values())))
    with TfjsSession(model_json, backend=backend) as session:
        session.check_inputs(inputs)
        parts: dict[str, list] = {}
        for start in range(0, n, batch):
            for k, v in session.predict({k: x[start : start + batch] for k, x in inputs.items()}).items():
                parts.setdefault(k, []).append(v)
        times = ()
        if runs or time_budget_s:
            times = session.latency({k: x[:1] for k, x in inputs.items()}, warmup, runs, time_budget_s)
        return TfjsRun({k: np.concatenate(v) for k, v in parts.items()}, times, session.version)


def _padded(x: np.ndarray, size: int) -> np.ndarray:
    """``x`` with its last row repeated up to ``size`` rows (a fixed-batch graph takes exactly that many)."""
    return x if len(x) >= size else np.concatenate([x, np.repeat(x[-1:], size - len(x), axis=0)])
