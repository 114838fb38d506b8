"""The device side of ``eval --device``: sent as source over SSH and run there by the user's own Python as the user's
shell starts it (user site, PYTHONPATH, a venv's packages; Python >= 3.8, numpy, one TFLite runtime; nothing of
edgetool is installed on the device). The bootstrap (``transport.BOOTSTRAP``) drops the working directory from
``sys.path`` before anything is imported, and the runner works in its own private temp dir.

It imports nothing of edgetool: ``runner_program.runner_source`` appends the host's own ``time_loop``, ``tflite_step`` and
``fit_inputs`` (edge_tool.litert.timing) to this text, so the device times exactly the loop the host times.

Protocol (see ``frames``): every message is a frame, a 4-byte big-endian length, a JSON header and then the raw
bytes of the arrays it lists (``arrays``: name, dtype, shape) or of one ``blob``. The runner says ``hello`` (the
device's facts), loads the model sent in the ``load`` frame and answers ``ready`` with its tensor bindings, then
answers each ``predict`` (prepared feeds by tensor index, the output index wanted) with that raw output, or a
``latency`` request with the raw timed calls. ``close`` ends it. Every error is answered as ``failed``.

Everything lives in a private temp dir (mkdtemp), removed on every way out: normal end, an error, SIGTERM/SIGHUP,
or the host going away (end of stdin: the reader thread removes it and exits the process at once).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time

RUNTIMES = (
    ("ai_edge_litert", "ai_edge_litert.interpreter", "ai-edge-litert"),
    ("tflite_runtime", "tflite_runtime.interpreter", "tflite-runtime"),
    ("tf.lite", "tensorflow.lite.python.interpreter", "tensorflow"),
)
_HEAD = struct.Struct(">I")
MAGIC = b"\nEDGETOOL-DEVICE-RUNNER-1\n"  # before the first frame: whatever a login script printed comes before it
MAX_HEADER = 1 << 24
_state = {"tmp": None, "closing": False, "cls": None}
_cleaning = threading.Lock()  # the reader thread's exit waits for a removal the main thread has begun


def _cleanup() -> None:
    with _cleaning:
        tmp, _state["tmp"] = _state["tmp"], None
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _read_exact(stream, n: int) -> bytes:
    buf = stream.read(n)
    if buf is None or len(buf) < n:
        raise EOFError
    return buf


def read_frame(stream):
    """(header dict, {name: array} or blob bytes) of the next frame; EOFError at the end of the stream."""
    size = _HEAD.unpack(_read_exact(stream, 4))[0]
    if size > MAX_HEADER:
        raise ValueError("frame header of %d bytes" % size)
    header = json.loads(_read_exact(stream, size).decode("utf-8"))
    if "blob" in header:
        return header, _read_exact(stream, int(header["blob"]))
    arrays = {}
    if header.get("arrays"):
        import numpy as np  # only here: a device without numpy can still say hello
    for spec in header.get("arrays") or []:
        dtype, shape = np.dtype(spec["dtype"]), tuple(int(s) for s in spec["shape"])
        count = 1
        for s in shape:
            count *= s
        arrays[spec["name"]] = np.frombuffer(_read_exact(stream, count * dtype.itemsize), dtype).reshape(shape)
    return header, arrays


def write_frame(stream, header: dict, arrays=None) -> None:
    """Write one frame: header (with ``arrays`` described) then each array's bytes."""
    if arrays:
        import numpy as np

        arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    arrays = arrays or {}
    header = dict(header, arrays=[{"name": k, "dtype": v.dtype.str, "shape": list(v.shape)} for k, v in arrays.items()])
    raw = json.dumps(header).encode("utf-8")
    stream.write(_HEAD.pack(len(raw)) + raw)
    for v in arrays.values():
        stream.write(v.tobytes())
    stream.flush()


def _reader(stream, frames: queue.Queue) -> None:
    """Read frames into ``frames``; the host gone (end of input) before ``close``: clean up and exit now."""
    try:
        while True:
            frames.put(read_frame(stream))
    except BaseException:
        if not _state["closing"]:
            _cleanup()
            os._exit(3)
        frames.put(None)


def peak_rss_mb() -> float:
    """Peak RSS of this process in MB (VmHWM where /proc has it, else getrusage ru_maxrss)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024.0 * 1024.0) if sys.platform == "darwin" else kb / 1024.0


def bindings(interp) -> tuple:
    """(inputs, outputs): [name, index, dtype, shape signature, scale, zero point], serving_default's names."""

    def one(name, d):
        scale, zp = d.get("quantization", (0.0, 0))
        shape = [int(s) for s in d.get("shape_signature", d["shape"])]
        return [name, int(d["index"]), __import__("numpy").dtype(d["dtype"]).str, shape, float(scale), int(zp)]

    sigs = interp.get_signature_list()
    if sigs:
        runner = interp.get_signature_runner("serving_default" if "serving_default" in sigs else sorted(sigs)[0])
        ins, outs = runner.get_input_details(), runner.get_output_details()
        return [one(n, ins[n]) for n in sorted(ins)], [one(n, outs[n]) for n in sorted(outs)]
    return (
        [one(d["name"], d) for d in interp.get_input_details()],
        [one(d["name"], d) for d in interp.get_output_details()],
    )
