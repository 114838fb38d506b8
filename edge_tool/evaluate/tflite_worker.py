"""Worker process for one .tflite artefact's accuracy pass:
``python -m edge_tool.evaluate.tflite_worker MODEL THREADS [LOCKFILE]`` (with LOCKFILE, batches run one worker at a
time, see ``CoreLock``).

Imports only numpy and LiteRT. Speaks JSON lines (see ``isolated``): first answer ``{"ready", "runtime",
"batching", "stateful"}``; then per request ``{"op": "predict", "inputs": {name: file.npy}, "out_names",
"ref_names", "out": file.npz}`` it writes the (dequantized, float64) outputs matching the reference's
``out_names`` (as ``o0``, ``o1``, ... in that order) and answers ``{"ok": true, "batching", ...}`` (the first answer also names ``first_feeds``, the prepared first
sample(s) for the latency loop, and the output tensor indices). Bad input (data that does not fit the model)
answers ``{"error": "DataError", "message"}``; a model LiteRT refuses to run answers ``{"failed": reason}``. A
crash of LiteRT simply ends the process: the parent names the signal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from edge_tool.errors import UsageError
from edge_tool.litert.tflite_runner import TfliteInterpreter


def with_version(runtime: str) -> str:
    """``runtime`` (``ai_edge_litert``, ``tflite_runtime``, ``tf.lite (…)``) with its installed version, as a device
    row names its runtime: "ai_edge_litert 2.3.0"."""
    from importlib import metadata  # noqa: PLC0415

    name, _, rest = runtime.partition(" ")
    dist = {"ai_edge_litert": "ai-edge-litert", "tflite_runtime": "tflite-runtime"}.get(name, "tensorflow")
    try:
        return " ".join(filter(None, (name, metadata.version(dist), rest)))
    except metadata.PackageNotFoundError:
        return runtime


def _answer(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def _first_feeds(model, feeds: dict[int, np.ndarray], out: Path) -> str:
    """Save what the latency loop feeds: the first sample (the file's fixed batch B, padded, when B > 1)."""
    b = model.fixed_batch
    first = {}
    for idx, x in feeds.items():
        chunk = x[:b]
        if len(chunk) < b:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], b - len(chunk), axis=0)])
        first[f"t{idx}"] = chunk
    np.savez(out, **first)
    return str(out)


class CoreLock:
    """An exclusive lock on a file shared by eval's LiteRT workers, held while one runs a batch, so they take the
    cores left to them in turn instead of time-slicing one core (each switch evicts the other's working set).
    Without a path, or without fcntl (Windows), it does nothing."""

    def __init__(self, path: str | None):
        self._fd = None
        try:
            import fcntl  # noqa: PLC0415
        except ImportError:
            return
        if path:
            self._fcntl = fcntl
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def __enter__(self):
        if self._fd is not None:
            self._fcntl.flock(self._fd, self._fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            self._fcntl.flock(self._fd, self._fcntl.LOCK_UN)


def _predict(model, req: dict, state: dict) -> dict:
    inputs = {name: np.load(f) for name, f in req["inputs"].items()}
    feeds = model.prepare(inputs)
    bindings = [model.output_for(n, req["ref_names"].index(n)) for n in req["out_names"]]
    with state["lock"]:
        raw = model.predict(feeds)
    np.savez(req["out"], **{f"o{i}": model.dequantize(b, raw[b.index]) for i, b in enumerate(bindings)})
    doc = {"ok": True, "batching": model.describe_batching()}
    if not state.get("first_sent"):
        state["first_sent"] = True
        doc["first_feeds"] = _first_feeds(model, feeds, Path(req["out"]).with_suffix(".first.npz"))
        doc["output_indices"] = [b.index for b in model.outputs]
    return doc


def main(argv: list[str]) -> int:
    """Load the model, answer requests until "close" or end of input."""
    try:
        model = TfliteInterpreter(Path(argv[0]), threads=int(argv[1]))
    except UsageError as exc:
        _answer({"failed": f"LiteRT cannot load it: {exc}"})
        return 0
    _answer(
        {
            "ready": True,
            "runtime": with_version(model.runtime),
            "batching": model.describe_batching(),
            "stateful": model.facts.stateful,
        }
    )
    state: dict = {"lock": CoreLock(argv[2] if len(argv) > 2 else None)}
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "close":
            break
        try:
            _answer(_predict(model, req, state))
        except UsageError as exc:
            _answer({"error": type(exc).__name__, "message": str(exc)})
        except (RuntimeError, ValueError) as exc:
            _answer(
                {
                    "failed": f"LiteRT refused to run it: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                }
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
