"""Worker process for one .onnx artefact in ONNX Runtime (CPU execution provider):
``python -m edge_tool.evaluate.runtimes.ort_worker MODEL THREADS LOCKFILE pass|latency``.

Imports only numpy and onnxruntime. Speaks JSON lines (see ``isolated``). ``pass``: first answer ``{"ready",
"runtime", "batching"}``, then per ``{"op": "predict", "inputs": {name: file.npy}, "out_names", "ref_names", "out"}``
the float64 outputs matching the reference's ``out_names`` (``o0``, ``o1``, ... in ``out``), answered ``{"ok": true}``
(the first answer also names ``first_feeds``, the prepared first sample for the latency loop). ``latency``: one
request ``{"op": "latency", "feeds", "warmup", "runs", "time_budget_s"}`` answered ``{"latency", "peak_rss_mb"}``,
the session created in this fresh process (cold start: session + first run). Data that does not fit the model
answers ``{"error": "DataError", "message"}``; a model ONNX Runtime refuses answers ``{"failed": reason}``; a crash
ends the process and the parent names the signal.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, UsageError, collect_and_raise
from edge_tool.evaluate.latency import peak_rss_mb, summarize
from edge_tool.evaluate.tflite_worker import CoreLock
from edge_tool.litert.timing import time_loop

PROVIDER = "CPUExecutionProvider"
_DTYPES = {
    "float": np.float32,
    "float16": np.float16,
    "double": np.float64,
    "uint8": np.uint8,
    "int8": np.int8,
    "uint16": np.uint16,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}


def _answer(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def open_session(model: str, threads: int):
    """An InferenceSession on the CPU execution provider with ``threads`` intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=opts, providers=[PROVIDER])


class OrtModel:
    """One session; inputs matched to the reference's by name (by position if unnamed), prepared to the model's
    dtypes, run in whole batches where the batch dimension is free (chunks of the file's fixed batch otherwise)."""

    def __init__(self, path: str, threads: int):
        self.path = path
        self.session = open_session(path, threads)
        self.inputs, self.outputs = self.session.get_inputs(), self.session.get_outputs()
        firsts = {i.shape[0] if i.shape else 1 for i in self.inputs}
        fixed = next(iter(firsts)) if len(firsts) == 1 else 1
        self.batch = fixed if isinstance(fixed, int) and fixed > 0 else None  # None: any batch

    def describe_batching(self) -> str:
        """How the accuracy pass runs the model, for the report."""
        return "batched" if self.batch is None else (f"fixed batch {self.batch}" if self.batch > 1 else "batch 1")

    def prepare(self, inputs: dict) -> dict[str, np.ndarray]:
        """The data as the model's inputs want it (DataError naming every input that does not fit)."""
        names = list(inputs)
        mine = {i.name: i for i in self.inputs}
        if set(names) <= set(mine):
            pairs = [(n, mine[n]) for n in names]
        elif len(names) == len(self.inputs):
            pairs = list(zip(names, self.inputs))
        else:
            raise DataError(
                f"{self.path} has inputs {sorted(mine)}; expected the reference's inputs {names} (same names or count)."
            )
        problems, feeds = [], {}
        for name, spec in pairs:
            x = np.asarray(inputs[name])
            want = [d if isinstance(d, int) and d > 0 else None for d in spec.shape[1:]]
            if len(want) != x.ndim - 1 or any(w not in (None, g) for w, g in zip(want, x.shape[1:])):
                problems.append(
                    f"input {name!r}: data per-sample shape {tuple(x.shape[1:])}, but "
                    f"{Path(self.path).name} expects {tuple(want)} (eval feeds NHWC, as the reference)"
                )
                continue
            feeds[spec.name] = _cast(x, spec, problems)
        collect_and_raise(problems, DataError, f"Eval data does not fit {self.path}:")
        return feeds

    def predict(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Every output (graph order) for every sample of ``feeds``."""
        n = len(next(iter(feeds.values())))
        if self.batch is None:
            try:
                return self.session.run(None, feeds)
            except Exception:
                self.batch = 1
        outs: list[list] = [[] for _ in self.outputs]
        for start in range(0, n, self.batch):
            chunk = {k: _pad(x[start : start + self.batch], self.batch) for k, x in feeds.items()}
            for acc, y in zip(outs, self.session.run(None, chunk)):
                acc.append(y[: min(self.batch, n - start)])
        return [np.concatenate(acc) for acc in outs]

    def first(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """What the latency loop feeds: the first sample (the file's fixed batch, padded, when it has one)."""
        return {k: _pad(x[: self.batch or 1], self.batch or 1) for k, x in feeds.items()}


def _pad(x: np.ndarray, b: int) -> np.ndarray:
    return x if len(x) >= b else np.concatenate([x, np.repeat(x[-1:], b - len(x), axis=0)])


def _cast(x: np.ndarray, spec, problems: list[str]) -> np.ndarray:
    """``x`` as the input's dtype; integer inputs take integral data within their range only (no scale exists at
    an ONNX input: a QDQ model's inputs stay float)."""
    dtype = np.dtype(_DTYPES.get(spec.type.removeprefix("tensor(").rstrip(")"), np.float32))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if (x.dtype.kind == "f" and not np.all(x == np.round(x))) or (
            x.size and (x.min() < info.min or x.max() > info.max)
        ):
            problems.append(
                f"input {spec.name!r} is raw {dtype}, but the data ({x.dtype}, range {x.min()}.."
                f"{x.max()}) does not fit {dtype}"
            )
            return x
    return x.astype(dtype, copy=False)


def _predict(model: OrtModel, req: dict, state: dict) -> dict:
    feeds = model.prepare({name: np.load(f) for name, f in req["inputs"].items()})
    position = {o.name: i for i, o in enumerate(model.outputs)}
    picks = [position.get(n, req["ref_names"].index(n)) for n in req["out_names"]]
    if any(p >= len(model.outputs) for p in picks):
        raise DataError(f"{model.path} has outputs {list(position)}; no match for {req['out_names']}.")
    with state["lock"]:
        raw = model.predict(feeds)
    np.savez(req["out"], **{f"o{i}": raw[p].astype(np.float64) for i, p in enumerate(picks)})
    doc = {"ok": True, "batching": model.describe_batching()}
    if not state.get("first_sent"):
        state["first_sent"] = True
        first = Path(req["out"]).with_suffix(".first.npz")
        np.savez(first, **{f"t{i}": x for i, x in enumerate(model.first(feeds).values())}, names=list(feeds))
        doc["first_feeds"] = str(first)
    return doc


def _latency(model_path: str, threads: int, req: dict) -> dict:
    with np.load(req["feeds"]) as npz:
        feeds = {str(name): npz[f"t{i}"] for i, name in enumerate(npz["names"])}
    t0 = time.perf_counter_ns()
    session = open_session(model_path, threads)
    session.run(None, feeds)
    cold_ms = (time.perf_counter_ns() - t0) / 1e6
    times = time_loop(lambda: session.run(None, feeds), req["warmup"], req["runs"], req["time_budget_s"])
    stats = summarize(times, cold_ms)
    return {"latency": {**stats.to_dict(), "samples": list(stats.samples_ms)}, "peak_rss_mb": peak_rss_mb()}


def _refusal(exc: Exception) -> str:
    text = str(exc).strip()
    return f"ONNX Runtime refused to run it: {text.splitlines()[0][:300] if text else type(exc).__name__}"


def main(argv: list[str]) -> int:
    """Serve the ``pass`` or ``latency`` requests for the model until "close" or end of input."""
    import onnxruntime as ort

    model_path, threads, mode = argv[0], int(argv[1]), argv[3]
    if mode == "latency":
        line = sys.stdin.readline()
        if line.strip() and json.loads(line).get("op") == "latency":
            try:
                _answer(_latency(model_path, threads, json.loads(line)))
            except Exception as exc:
                _answer({"failed": _refusal(exc)})
        return 0
    try:
        model = OrtModel(model_path, threads)
    except Exception as exc:
        _answer({"failed": f"ONNX Runtime cannot load it: {str(exc).strip()[:300]}"})
        return 0
    _answer(
        {"ready": True, "runtime": f"onnxruntime {ort.__version__} ({PROVIDER})", "batching": model.describe_batching()}
    )
    state: dict = {"lock": CoreLock(argv[2] or None)}
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "close":
            break
        try:
            _answer(_predict(model, req, state))
        except UsageError as exc:
            _answer({"error": type(exc).__name__, "message": str(exc)})
        except Exception as exc:
            _answer({"failed": _refusal(exc)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
