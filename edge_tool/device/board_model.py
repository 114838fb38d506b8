"""The device side's model and request loop, sent with ``board_runner`` (see there; no edgetool import here either).

Inference follows ``tflite_runner.TfliteInterpreter``: the whole batch (at most ``chunk`` samples, the host's
``samples_per_invoke``) per invoke when every input's batch dimension is dynamic and the model carries no state
(checked once against per-sample results), the file's own batch B when it has one (the last chunk padded), else one
sample at a time; recurrent state reset before every invoke. The feeds arrive prepared by the host (quantized with
the model's own scale), the raw output goes back: the host dequantizes, exactly as for a host row.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile


class BoardModel:
    """One .tflite on the device's runtime."""

    def __init__(self, cls, path: str, threads: int, stateful: bool, single: bool = False, chunk: int = 0):
        self.interp = cls(model_path=path, num_threads=threads)
        self.chunk = chunk  # samples per batched invoke (0: the whole batch)
        self.inputs, self.outputs = bindings(self.interp)
        self.stateful = stateful
        firsts = set(b[3][0] if b[3] else 1 for b in self.inputs)
        if firsts == {-1} and not stateful:
            self.batching = "dynamic"
        elif len(firsts) == 1 and next(iter(firsts)) > 1:
            self.batching = "fixed"
        else:
            self.batching = "single"
        self.crashed = single and self.batching == "dynamic"  # a batched invoke killed an earlier runner
        if self.crashed:
            self.batching = "single"
        self.fixed = self.inputs[0][3][0] if self.batching == "fixed" else 1
        self.checked = self.batching != "dynamic"
        self.shapes = None

    def describe(self) -> str:
        """How the accuracy pass runs the model (the row's ``accuracy_pass``)."""
        if self.batching == "dynamic":
            return "batched"
        if self.batching == "fixed":
            return "fixed batch %d" % self.fixed
        why = "batched invokes crashed the runtime" if self.crashed else "fixed batch 1"
        return "batch 1 (%s)" % ("stateful" if self.stateful else why)

    def fit(self, chunk: dict) -> None:
        """Resize inputs whose shape differs from ``chunk``'s, then allocate."""
        if self.shapes is None:
            self.shapes = {d["index"]: tuple(d["shape"]) for d in self.interp.get_input_details()}
            self.interp.allocate_tensors()
        changed = {i: x.shape for i, x in chunk.items() if self.shapes.get(i) != x.shape}
        if changed:
            try:
                for i, shape in changed.items():
                    self.interp.resize_tensor_input(i, list(shape))
                self.interp.allocate_tensors()
            except (RuntimeError, ValueError):
                self.shapes = None
                raise
            self.shapes.update(changed)

    def invoke(self, chunk: dict, indices: list):
        """One invoke (padded to the fixed batch), state reset first; outputs ``indices`` for the chunk's samples."""
        import numpy as np

        m = len(next(iter(chunk.values())))
        if self.batching == "fixed" and m < self.fixed:
            chunk = {k: np.concatenate([x, np.repeat(x[-1:], self.fixed - m, axis=0)]) for k, x in chunk.items()}
        self.fit(chunk)
        if self.stateful:
            self.interp.reset_all_variables()
        for i, x in chunk.items():
            self.interp.set_tensor(i, x)
        self.interp.invoke()
        return [self.interp.get_tensor(index)[:m].copy() for index in indices]

    def predict(self, feeds: dict, indices: list):
        """Raw outputs ``indices`` (in that order) for every sample of ``feeds``."""
        import numpy as np

        n = len(next(iter(feeds.values())))
        if not self.checked:
            self.checked = True
            self.check(feeds, indices)
        outs, start = [], 0
        while start < n:
            step = min(n, self.chunk or n) if self.batching == "dynamic" else self.fixed
            try:
                outs.append(self.invoke({k: x[start : start + step] for k, x in feeds.items()}, indices))
            except (RuntimeError, ValueError):
                if self.batching != "dynamic":
                    raise
                self.batching = "single"
                continue
            start += step
        return [np.concatenate([o[j] for o in outs]) for j in range(len(indices))]

    def check(self, feeds: dict, indices: list) -> None:
        """Keep batching only if batched outputs equal per-sample outputs on the first two samples."""
        import numpy as np

        k = min(2, len(next(iter(feeds.values()))))
        head = {i: x[:k] for i, x in feeds.items()}
        try:
            batched = self.invoke(head, indices)
        except (RuntimeError, ValueError):
            self.batching = "single"
            return
        self.batching = "single"
        singles = [self.invoke({i: x[j : j + 1] for i, x in head.items()}, indices) for j in range(k)]
        for n, index in enumerate(indices):
            b = batched[n].astype(np.float64)
            single = np.concatenate([s[n] for s in singles]).astype(np.float64)
            quantized = any(o[1] == index and o[4] != 0.0 for o in self.outputs)
            tol = 1.0 if quantized else 1e-4 * max(1.0, float(np.max(np.abs(single), initial=0)))
            if b.shape != single.shape or np.max(np.abs(b - single), initial=0) > tol:
                return
        self.batching = "dynamic"


def _first_error(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "%s: %s" % (type(exc).__name__, lines[0] if lines else "")


def _latency(cls, path: str, req: dict, arrays: dict) -> dict:
    """Cold start (load + allocate + first call) then the host's own timed loop, in this fresh process."""
    import time as _time

    feeds = {int(k[1:]): v for k, v in arrays.items()}
    t0 = _time.perf_counter_ns()
    interp = cls(model_path=path, num_threads=int(req["threads"]))
    fit_inputs(interp, feeds)
    step = tflite_step(interp, feeds, [int(i) for i in req["outputs"]], reset_state=bool(req["stateful"]))
    step()
    cold = (_time.perf_counter_ns() - t0) / 1e6
    times = time_loop(step, int(req["warmup"]), req["runs"], req["time_budget_s"])
    return {"latency": True, "times_ns": times, "cold_start_ms": cold, "peak_rss_mb": peak_rss_mb()}


def probe_zeros(cls, path: str) -> dict:
    """check's litert-cpu probe: load, allocate, invoke on zeros (dynamic dims set to 1); the runtime's refusal."""
    import numpy as np

    try:
        it = cls(model_path=path)
        for d in it.get_input_details():
            sig = [int(s) for s in d.get("shape_signature", d["shape"])]
            if any(s < 0 for s in sig):
                it.resize_tensor_input(d["index"], [1 if s < 0 else s for s in sig])
        it.allocate_tensors()
        for d in it.get_input_details():
            it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
        it.invoke()
    except (ValueError, RuntimeError) as exc:
        return {"probed": True, "ok": False, "error": str(exc)}
    return {"probed": True, "ok": True, "error": ""}


def _litert_load(cls, path: str, req: dict) -> tuple:
    """(model, ready answer) of the board's LiteRT (its ai-edge-litert, tflite-runtime or tf.lite)."""
    if cls is None:
        raise RuntimeError("no TFLite runtime on the device")
    args = int(req["threads"]), bool(req["stateful"]), bool(req.get("single")), int(req.get("chunk") or 0)
    model = BoardModel(cls, path, *args)
    return model, {"ready": True, "inputs": model.inputs, "outputs": model.outputs, "batching": model.describe()}


def _programs(cls) -> dict:
    """The runtimes this runner offers, by a request's ``runtime`` ("": LiteRT): (load, probe, latency) each."""
    return {
        "": (
            lambda path, req: _litert_load(cls, path, req),
            lambda path, req: probe_zeros(cls, path),
            lambda path, req, arrays: _latency(cls, path, req, arrays),
        ),
        "tflm": (tflm_load, lambda path, req: tflm_probe(path, int(req["arena"])), tflm_latency),
        "lm": (lambda path, req: lm_load(cls, path, req), lambda path, req: probe_zeros(cls, path), lm_latency),
    }


def _serve(out, frames, cls, path: str) -> None:
    """Answer requests until ``close``; the model lives at ``path`` in the private temp dir."""
    model, programs = None, _programs(cls)
    while True:
        item = frames.get()
        if item is None:
            return
        req, payload = item
        op = req.get("op")
        if op == "close":
            _state["closing"] = True
            write_frame(out, {"closed": True})
            return
        try:
            if op == "load":
                with open(path, "wb") as f:
                    f.write(payload)
                if req.get("mode") in ("latency", "probe"):
                    continue
                model, ready = programs[str(req.get("runtime") or "")][0](path, req)
                write_frame(out, ready)
            elif op == "predict":
                feeds = {int(k[1:]): v for k, v in payload.items()}
                ys = model.predict(feeds, [int(i) for i in req["outputs"]])
                write_frame(out, {"ok": True, "batching": model.describe()}, {"y%d" % n: y for n, y in enumerate(ys)})
            elif op == "lm":
                write_frame(out, *model.lm(req, payload))
            elif op == "sweep":  # a runner of this run was killed (SIGKILL: no cleanup of its own): its temp dir
                left = str(req["path"])
                if os.path.dirname(left) == os.path.dirname(_state["tmp"]) and os.path.basename(left).startswith(
                    "edgetool-device-"
                ):
                    shutil.rmtree(left, ignore_errors=True)
                write_frame(out, {"swept": True})
            elif op == "probe":
                write_frame(out, programs[str(req.get("runtime") or "")][1](path, req))
            elif op == "latency":
                write_frame(out, programs[str(req.get("runtime") or "")][2](path, req, payload))
        except MemoryError:
            write_frame(out, {"failed": "the device ran out of memory (MemoryError in the runner)"})
        except Exception as exc:
            write_frame(out, {"failed": _first_error(exc), "op": op})


def main() -> int:
    """Private temp dir, hello, then requests; the temp dir removed on every way out."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a runtime prints on stdout goes to stderr, not into the protocol
    stdin = sys.stdin.buffer
    faulthandler.enable()  # a runtime's SIGSEGV/SIGBUS/SIGABRT names itself on stderr (the OOM killer's SIGKILL cannot)

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(s, stop)
    try:
        frames = queue.Queue(maxsize=2)
        threading.Thread(target=_reader, args=(stdin, frames), daemon=True).start()
        out.write(MAGIC)
        # facts() imports and tries the runtime (seconds under emulation) before the temp dir exists: a runner killed
        # then leaves nothing on the board, and once the dir exists its path is in the hello the host sweeps by
        hello = facts()
        _state["tmp"] = tempfile.mkdtemp(prefix="edgetool-device-")
        hello["tmp"] = _state["tmp"]
        os.chdir(_state["tmp"])
        path = os.path.join(_state["tmp"], "model.tflite")
        write_frame(out, hello)
        cls = _state["cls"]
        if cls is None and hello["tflm"] is None:
            return 0
        _serve(out, frames, cls, path)
        return 0
    finally:
        _cleanup()
