"""The device side of ``eval --device``: sent as source over SSH and run there as ``python -I`` (Python >= 3.8,
numpy, one TFLite runtime; nothing of edgetool is installed on the device).

It imports nothing of edgetool: ``session.runner_source`` appends the host's own ``time_loop``, ``tflite_step`` and
``fit_inputs`` (edge_tool.evaluate.latency) to this text, so the device times exactly the loop the host times.

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
import platform
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
_state = {"tmp": None, "closing": False}
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


def _cpu() -> str:
    fields = {}
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or fields.get("hardware") or fields.get("cpu model") or ""
    if not name and "cpu part" in fields:
        name = "implementer %s part %s" % (fields.get("cpu implementer", "?"), fields["cpu part"])
    return name or platform.processor() or platform.machine(), fields


def _emulation(machine: str, cpu_fields: dict) -> list:
    """What says this Python runs under an emulator (qemu-user) rather than on a CPU of its own architecture."""
    found = sorted(k for k in os.environ if k.startswith("QEMU_"))
    evidence = ["environment sets %s" % ", ".join(found)] if found else []
    x86 = "vendor_id" in cpu_fields or "GenuineIntel" in str(cpu_fields.values())
    if machine.startswith(("aarch64", "arm")) and x86:
        evidence.append(
            "/proc/cpuinfo describes an x86 CPU (%s) while Python runs as %s"
            % (cpu_fields.get("model name", cpu_fields.get("vendor_id")), machine)
        )
    for path in ("/proc/self/maps", "/proc/%d/maps" % os.getppid()):
        try:
            with open(path, errors="replace") as f:
                if "qemu" in f.read():
                    evidence.append("%s maps a qemu binary" % path)
        except OSError:
            pass
    if os.path.exists("/proc/sys/fs/binfmt_misc/qemu-%s" % machine):
        evidence.append("binfmt_misc runs %s binaries through qemu-%s" % (machine, machine))
    return evidence


def _meminfo() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def _runtime():
    """(Interpreter class, runtime name, version, notes on the runtimes that failed to import)."""
    import importlib

    tried = []
    for name, module, dist in RUNTIMES:
        try:
            cls = importlib.import_module(module).Interpreter
        except Exception as exc:
            tried.append("%s: %s" % (dist, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
            continue
        try:
            from importlib.metadata import version

            ver = version(dist)
        except Exception:
            ver = "unknown"
        return cls, name, ver, tried
    return None, None, None, tried


def facts() -> dict:
    """The device as the runner sees it (the ``hello`` frame)."""
    machine = platform.machine()
    cpu, fields = _cpu()
    cls, runtime, ver, tried = _runtime()
    try:
        import numpy

        numpy_version = numpy.__version__
    except ImportError:
        numpy_version = None
    usage = shutil.disk_usage(_state["tmp"] or tempfile.gettempdir())
    evidence = _emulation(machine, fields)
    return {
        "hello": True,
        "machine": machine,
        "system": "%s %s" % (platform.system(), platform.release()),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_bytes": _meminfo(),
        "free_disk_bytes": usage.free,
        "python": platform.python_version(),
        "numpy": numpy_version,
        "runtime": runtime,
        "runtime_version": ver,
        "runtime_errors": tried,
        "emulated": bool(evidence),
        "emulation": evidence,
        "tmp": _state["tmp"],
        **tflm_facts(),
    }


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
