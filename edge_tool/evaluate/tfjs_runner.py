"""A TFJS graph model run by tfjs (cpu backend) in Node, through tfjs_run.js: a session fed batch by batch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, ModelError, UsageError, collect_and_raise
from edge_tool.evaluate.data import InputSpec

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("tfjs_run.js")
SETUP_HINT = ".venv/bin/python -m edge_tool.demo.vendor (npm ci in web_demo/, copies @tensorflow/tfjs 4.22.0 to web_demo/vendor/tf.min.js)"
_DT = {"DT_FLOAT": "float32", "DT_INT32": "int32", "DT_INT64": "int32", "DT_UINT8": "int32", "DT_INT8": "int32",
       "DT_INT16": "int32", "DT_BOOL": "bool"}


def tfjs_bundle_path() -> Path:
    """tf.min.js (UMD, require-able in Node): $EDGETOOL_TFJS_BUNDLE, web_demo/vendor/, web_demo/node_modules/."""
    candidates = [REPO / "web_demo" / "vendor" / "tf.min.js",
                  REPO / "web_demo" / "node_modules" / "@tensorflow" / "tfjs" / "dist" / "tf.min.js"]
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


def signature_inputs(model_json: Path) -> list[InputSpec]:
    """The graph model's signature inputs (name, dtype tfjs will use, shape) from model.json."""
    doc = json.loads(Path(model_json).read_text())
    specs = []
    for name, t in sorted((doc.get("signature") or {}).get("inputs", {}).items()):
        dims = t.get("tensorShape", {}).get("dim", [])
        shape = tuple(None if int(d.get("size", -1)) < 0 else int(d["size"]) for d in dims)
        specs.append(InputSpec(name, _DT.get(t.get("dtype"), "float32"), shape))
    return specs


_OUT_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.uint8}


class TfjsSession:
    """One Node process holding the loaded graph model; batches go in and come back one at a time.

    Inputs and outputs travel through small binary files in a private temp dir (one batch at a time), requests
    and answers as JSON lines on the process's stdin/stdout, so memory on both sides stays O(batch).
    Use as a context manager (the process and temp dir go away on exit).
    """

    def __init__(self, model_json: Path):
        self.model_json = Path(model_json)
        self.specs = signature_inputs(self.model_json)
        self._dtypes = {s.name: s.dtype for s in self.specs}
        bundle, node = tfjs_bundle_path(), node_binary()
        self._tmp = tempfile.TemporaryDirectory(prefix="edgetool-tfjs-")
        self._dir = Path(self._tmp.name)
        self._stderr = open(self._dir / "stderr.txt", "w+b")  # a file, not a pipe: a chatty tfjs cannot block
        self._proc = subprocess.Popen([node, str(SCRIPT), str(bundle), str(self.model_json)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
        ready = self._read()
        self.version = f"tfjs {ready['tfjs_version']} ({ready['backend']} backend, Node)"
        self._checked = False

    def __enter__(self) -> TfjsSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Node process and delete the temp files."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(json.dumps({"op": "close"}) + "\n")
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._proc.stdout.close()
        self._stderr.close()
        self._tmp.cleanup()

    def _read(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait()
            self._stderr.seek(0)
            err = self._stderr.read().decode(errors="replace").strip()
            raise ModelError(f"tfjs could not run {self.model_json} in Node: {err[-1500:]}")
        return json.loads(line)

    def _ask(self, request: dict) -> dict:
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the process died: _read reports its stderr
        return self._read()

    def check_inputs(self, inputs: dict) -> None:
        """DataError naming every mismatch between the data's inputs and the model's signature."""
        problems = []
        if self.specs and set(inputs) != {s.name for s in self.specs}:
            problems.append(f"{self.model_json} takes inputs {[s.name for s in self.specs]}, the data provides "
                            f"{sorted(inputs)}")
        for s in self.specs:
            if s.name not in inputs or not s.shape:
                continue
            want, got = s.shape[1:], inputs[s.name].shape[1:]
            if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got)):
                problems.append(f"input {s.name!r}: data per-sample shape {inputs[s.name].shape[1:]}, "
                                f"{self.model_json.parent.name} expects {s.shape[1:]}")
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

    def predict(self, inputs: dict) -> dict[str, np.ndarray]:
        """Outputs (float64) by signature name for one batch of inputs (batch-first arrays)."""
        if not self._checked:
            self.check_inputs(inputs)
            self._checked = True
        doc = self._ask({"op": "predict", "inputs": self._write_inputs(inputs, "in"), "out_dir": str(self._dir)})
        return {k: np.fromfile(v["file"], dtype=_OUT_DTYPES.get(v["dtype"], np.float32)).astype(np.float64)
                .reshape(v["shape"]) for k, v in doc["outputs"].items()}

    def latency(self, sample: dict, warmup: int, runs: int | None, time_budget_s: float | None) -> tuple[float, ...]:
        """Per-call milliseconds of batch-1 execute + dataSync on ``sample`` (warm-up calls untimed)."""
        doc = self._ask({"op": "latency", "inputs": self._write_inputs(sample, "lat"), "warmup": warmup,
                         "runs": runs or 0, "time_budget_s": time_budget_s})
        return tuple(doc["latency_ms"])


def run_tfjs(model_json: Path, inputs: dict, warmup: int, runs: int | None, time_budget_s: float | None = None,
             batch: int = 64) -> TfjsRun:
    """Run every sample of in-memory ``inputs`` through the model, ``batch`` at a time, then time batch-1 calls."""
    n = len(next(iter(inputs.values())))
    with TfjsSession(model_json) as session:
        session.check_inputs(inputs)
        parts: dict[str, list] = {}
        for start in range(0, n, batch):
            for k, v in session.predict({k: x[start:start + batch] for k, x in inputs.items()}).items():
                parts.setdefault(k, []).append(v)
        times = ()
        if runs or time_budget_s:
            times = session.latency({k: x[:1] for k, x in inputs.items()}, warmup, runs, time_budget_s)
        return TfjsRun({k: np.concatenate(v) for k, v in parts.items()}, times, session.version)
