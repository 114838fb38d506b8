"""The device side of ``eval --device URL --runtime tflm``: a .tflite run by TFLite Micro's Python interpreter on
the device, sent with ``board_runner`` (see there; no edgetool import here either).

The host measures the minimum tensor arena with its own TFLM and sends it; the device allocates exactly that and,
when its TFLM build needs more (another version, a 32-bit build), doubles it up to three times and says which
arena it ran with. TFLM runs one sample per invoke; inputs and outputs are addressed by position, the host sends
the tensor indices in TFLM's order. Feeds arrive prepared, raw outputs go back (the host dequantizes).
"""

from __future__ import annotations

TFLM_MODULE = "tflite_micro.python.tflite_micro.runtime"
ARENA_GROWTH = 3  # doublings tried beyond the host's measured minimum


def tflm_facts() -> dict:
    """``tflm``: the device's tflite-micro version (None when it does not import) and ``tflm_error``: why not."""
    import importlib

    try:
        importlib.import_module(TFLM_MODULE)
    except Exception as exc:
        return {"tflm": None, "tflm_error": _first_error(exc)}
    try:
        from importlib.metadata import version

        return {"tflm": version("tflite-micro"), "tflm_error": None}
    except Exception:
        return {"tflm": "unknown", "tflm_error": None}


def tflm_interpreter(path: str, arena: int):
    """(interpreter, arena used): the host's arena first, then doubled while this device's TFLM refuses it."""
    import importlib

    runtime = importlib.import_module(TFLM_MODULE)
    with open(path, "rb") as f:
        model = f.read()
    error = None
    for attempt in range(ARENA_GROWTH + 1):
        size = int(arena) << attempt
        try:
            return runtime.Interpreter.from_bytes(model, arena_size=size), size
        except (RuntimeError, ValueError) as exc:
            error = exc
    raise RuntimeError(
        "TFLite Micro on the device cannot allocate the model with up to %d bytes of arena: %s"
        % (int(arena) << ARENA_GROWTH, _first_error(error))
    )


class TflmBoardModel:
    """One .tflite in the device's TFLM interpreter; ``inputs``/``outputs``: tensor indices in TFLM's order."""

    def __init__(self, path: str, arena: int, inputs: list, outputs: list):
        self.interp, self.arena = tflm_interpreter(path, arena)
        self.inputs, self.outputs = [int(i) for i in inputs], [int(i) for i in outputs]

    def describe(self) -> str:
        """How the accuracy pass runs the model (the row's ``accuracy_pass``)."""
        return "batch 1 (TFLite Micro)"

    def step(self, feeds: dict, s: int, indices: list) -> list:
        """Sample ``s`` of ``feeds`` (by tensor index) in, one invoke, outputs ``indices`` out."""
        import numpy as np

        for pos, index in enumerate(self.inputs):
            self.interp.set_input(feeds[index][s : s + 1], pos)
        self.interp.invoke()
        return [np.array(self.interp.get_output(self.outputs.index(i))) for i in indices]

    def predict(self, feeds: dict, indices: list) -> list:
        """Raw outputs ``indices`` (in that order) for every sample of ``feeds``, one invoke each."""
        import numpy as np

        n = len(next(iter(feeds.values())))
        rows = [self.step(feeds, s, indices) for s in range(n)]
        return [np.concatenate([r[j] for r in rows]) for j in range(len(indices))]


def tflm_load(path: str, req: dict) -> tuple:
    """(model, ready answer): the host's arena (grown if this TFLM needs more), tensor indices in TFLM's order."""
    model = TflmBoardModel(path, int(req["arena"]), req["inputs"], req["tensor_outputs"])
    return model, {"ready": True, "batching": model.describe(), "arena": model.arena}


def tflm_latency(path: str, req: dict, arrays: dict) -> dict:
    """Cold start (interpreter + arena + first call) then the host's own timed loop on the first sample."""
    import time as _time

    feeds = {int(k[1:]): v for k, v in arrays.items()}
    indices = [int(i) for i in req["outputs"]]
    t0 = _time.perf_counter_ns()
    model = TflmBoardModel(path, int(req["arena"]), req["inputs"], req["tensor_outputs"])

    def step():
        return model.step(feeds, 0, indices)

    step()
    cold = (_time.perf_counter_ns() - t0) / 1e6
    times = time_loop(step, int(req["warmup"]), req["runs"], req["time_budget_s"])
    return {
        "latency": True,
        "times_ns": times,
        "cold_start_ms": cold,
        "peak_rss_mb": peak_rss_mb(),
        "arena": model.arena,
    }


def tflm_probe(path: str, arena: int) -> dict:
    """check's tflm probe on the device: allocate (arena growth as above) and invoke once on zeros."""
    import numpy as np

    try:
        interp, used = tflm_interpreter(path, arena)
        pos = 0
        while True:
            try:
                d = interp.get_input_details(pos)
            except (ValueError, IndexError, RuntimeError):
                break
            interp.set_input(np.zeros(d["shape"], d["dtype"]), pos)
            pos += 1
        interp.invoke()
    except (ValueError, RuntimeError) as exc:
        return {"probed": True, "ok": False, "error": str(exc)}
    return {"probed": True, "ok": True, "error": "", "arena": used}
