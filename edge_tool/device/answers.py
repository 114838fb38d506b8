"""What a board's runner answers, read with bounds and checked against a schema before anything uses it.

A board is input like any file: its frames are read only up to fixed sizes (the header, then arrays whose dtype,
shape and total size were checked from the header first, so a frame announcing a 4 GB blob or an 8 TB array is
refused before one byte of it is read), and every field is checked for its type and range. Strings are shortened
and their control characters made visible; numbers must be finite (``NaN``/``Infinity`` are refused by the JSON
parser itself) and non-negative where they measure something. A violation raises ``BadAnswer`` ("the device
answered …: expected …"), a ``RuntimeFailure``: that row's failure, never the run's.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable

import numpy as np

from edge_tool.core.textsafe import visible
from edge_tool.core.visible import LONG_TEXT, capped
from edge_tool.errors import RuntimeFailure

MAX_HEADER = 1 << 24  # bytes of one answer's JSON header (a long latency list fits; a flood does not)
MAX_ARRAY_BYTES = 1 << 30  # bytes of one answer's arrays (what the board sends back for one batch)
MAX_ARRAYS = 256
MAX_TIMES = 1_000_000  # timed calls in one latency answer
TEXT = 300  # characters kept of a string field (a failure reason: LONG_TEXT, the rule of every message)
_DTYPE = re.compile(r"[<>|=]?(b1|[iu][1248]|f[248])")
_HEAD = struct.Struct(">I")
RUNTIME_NAMES = ("ai_edge_litert", "tflite_runtime", "tf.lite")


class BadAnswer(RuntimeFailure):
    """The board answered something that is not what the protocol allows: that row's failure."""


def _bad(what: str, value: object, expected: str) -> BadAnswer:
    shown = visible(repr(value))
    shown = shown if len(shown) <= 80 else shown[:80] + f"… ({len(shown)} characters)"
    return BadAnswer(f"the device answered {what} = {shown}: expected {expected}")


def text(value: object, limit: int = TEXT) -> str:
    """``value`` as one bounded, terminal-safe string (control characters shown as escapes, the middle cut)."""
    return capped(value, limit)


def _exact(reader, n: int) -> bytes:
    buf = reader.read(n)
    if len(buf) < n:
        raise EOFError
    return buf


def _no_constant(name: str):
    raise ValueError(f"{name} is not a finite number")


def read_answer(reader, check_arrays: Callable[[list], None] | None = None) -> tuple[dict, dict]:
    """(header, arrays) of the next frame from ``reader``; the array specs are checked by ``check_arrays`` (None:
    no arrays allowed) and against the size bounds before any array byte is read. EOFError at the end of input."""
    size = _HEAD.unpack(_exact(reader, 4))[0]
    if size > MAX_HEADER:
        raise _bad("a frame header size", size, f"at most {MAX_HEADER} bytes")
    raw = _exact(reader, size)
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise _bad("a frame header", raw[:60], f"a JSON object ({text(exc, 120)})") from None
    if not isinstance(header, dict):
        raise _bad("a frame header", header, "a JSON object")
    if "blob" in header:
        raise _bad("a blob size", header["blob"], "no blob (the host sends blobs, the device never does)")
    specs = header.pop("arrays", None) or []
    if "failed" in header and not specs:  # the runner's own failure: its reason, no outputs to check
        return header, {}
    if specs and check_arrays is None:
        raise _bad("arrays", specs, "none in this answer")
    specs = [_spec(s) for s in _list(specs, "arrays", MAX_ARRAYS)]
    total = sum(math.prod(shape) * dtype.itemsize for _, dtype, shape in specs)
    if total > MAX_ARRAY_BYTES:
        raise _bad("arrays of total size", total, f"at most {MAX_ARRAY_BYTES} bytes")
    if check_arrays is not None:
        check_arrays(specs)
    arrays = {}
    for name, dtype, shape in specs:
        data = _exact(reader, math.prod(shape) * dtype.itemsize)
        arrays[name] = np.frombuffer(data, dtype).reshape(shape)
    return header, arrays


def _spec(s: object) -> tuple[str, np.dtype, tuple]:
    if not isinstance(s, dict) or not isinstance(s.get("name"), str) or len(s["name"]) > 64:
        raise _bad("an array description", s, "{name, dtype, shape}")
    dtype = s.get("dtype")
    if not isinstance(dtype, str) or not _DTYPE.fullmatch(dtype):
        raise _bad(f"array {s['name']!r} of dtype", dtype, "a numeric dtype (bool, int8..int64, float16..float64)")
    shape = s.get("shape")
    if not isinstance(shape, list) or len(shape) > 16 or not all(_is_int(d) and 0 <= d < 1 << 40 for d in shape):
        raise _bad(f"array {s['name']!r} of shape", shape, "a list of at most 16 non-negative sizes")
    return s["name"], np.dtype(dtype), tuple(shape)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list(v: object, what: str, limit: int) -> list:
    if not isinstance(v, list) or len(v) > limit:
        raise _bad(what, v, f"a list of at most {limit} items")
    return v


def field(h: dict, key: str, kind: str, optional: bool = False, limit: int = TEXT):
    """``h[key]`` checked as ``kind`` (text, int, number, bool, texts), normalized; BadAnswer when it is not."""
    v = h.get(key)
    if v is None:
        if optional:
            return [] if kind == "texts" else None
        raise _bad(key, v, f"a {kind}")
    if kind == "text" and isinstance(v, str):
        return text(v, limit)
    if kind == "int" and _is_int(v) and 0 <= v < 1 << 62:
        return v
    if kind == "number" and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e300:
        return float(v)
    if kind == "bool" and isinstance(v, bool):
        return v
    if kind == "texts" and isinstance(v, list) and len(v) <= 64 and all(isinstance(x, str) for x in v):
        return [text(x, limit) for x in v]
    expected = {"number": "a finite number >= 0", "int": "an integer >= 0", "texts": "a list of strings"}
    raise _bad(key, v, expected.get(kind, f"a {kind}"))


def tensor(entry: object, what: str) -> list:
    """One binding of a ``ready`` answer: [name, index, dtype, shape signature, scale, zero point]."""
    ok = (
        isinstance(entry, list)
        and len(entry) == 6
        and isinstance(entry[0], str)
        and _is_int(entry[1])
        and 0 <= entry[1] < 1 << 31
        and isinstance(entry[2], str)
        and _DTYPE.fullmatch(entry[2])
        and isinstance(entry[3], list)
        and len(entry[3]) <= 16
        and all(_is_int(d) and -1 <= d < 1 << 31 for d in entry[3])
        and isinstance(entry[4], (int, float))
        and math.isfinite(entry[4])
        and _is_int(entry[5])
        and abs(entry[5]) < 1 << 31
    )
    if not ok:
        raise _bad(what, entry, "[name, index, numeric dtype, shape, finite scale, zero point]")
    return [text(entry[0], 200), *entry[1:]]


def failed_reason(h: dict) -> str | None:
    """The runner's own failure reason (bounded, terminal-safe), or None when the answer is not a failure."""
    if "failed" not in h:
        return None
    return field(h, "failed", "text", limit=LONG_TEXT)


_HELLO = {
    "machine": ("text", False),
    "system": ("text", True),
    "cpu": ("text", True),
    "cores": ("int", True),
    "proc": ("bool", True),
    "memory_bytes": ("int", True),
    "memory_available_bytes": ("int", True),
    "free_disk_bytes": ("int", True),
    "python": ("text", False),
    "numpy": ("text", True),
    "runtime_version": ("text", True),
    "runtime_errors": ("texts", True),
    "emulated": ("bool", True),
    "emulation": ("texts", True),
    "executable": ("text", True),
    "venv": ("bool", True),
    "managed": ("bool", True),
    "home": ("text", True),
    "prefix": ("text", True),
    "root": ("bool", True),
    "user_site": ("text", True),
    "sys_path": ("texts", True),
    "tflm": ("text", True),
}
_TMP = re.compile(r"/[A-Za-z0-9_./+-]{0,400}/edgetool-device-[A-Za-z0-9_]{1,64}")


def hello(h: dict) -> dict:
    """The runner's ``hello``: the device's facts, every one checked (BadAnswer for a fact it could not parse)."""
    if h.get("hello") is not True:
        raise _bad("instead of hello", h, "its facts ({hello: true, machine, python, ...})")
    out = {key: field(h, key, kind, optional) for key, (kind, optional) in _HELLO.items()}
    if out["cores"] == 0:
        raise _bad("cores", 0, "an integer >= 1")
    runtime = h.get("runtime")
    if runtime is not None and runtime not in RUNTIME_NAMES:
        raise _bad("runtime", runtime, f"one of {', '.join(RUNTIME_NAMES)} or null")
    tmp = h.get("tmp")
    if tmp is not None and not (isinstance(tmp, str) and _TMP.fullmatch(tmp) and ".." not in tmp):
        raise _bad("tmp", tmp, "the runner's temp dir (/…/edgetool-device-…)")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?\S{0,20}", h["python"]):
        raise _bad("python", h["python"], "a version such as 3.11.2")
    return {
        **out,
        "hello": True,
        "runtime": runtime,
        "tmp": tmp,
        "runtime_broken": field(h, "runtime_broken", "text", True, LONG_TEXT),
        "tflm_error": field(h, "tflm_error", "text", True, LONG_TEXT),
    }


def ready(h: dict, tflm: bool = False) -> dict:
    """The ``ready`` answer to a ``load``: the model's bindings (LiteRT) or the arena used (TFLM)."""
    if h.get("ready") is not True:
        raise _bad("instead of ready", h, "{ready: true, ...}")
    out = {"ready": True, "batching": field(h, "batching", "text", limit=100)}
    if tflm:
        return {**out, "arena": field(h, "arena", "int", True)}
    for key in ("inputs", "outputs"):
        out[key] = [tensor(e, f"an {key[:-1]}") for e in _list(h.get(key), key, 1024)]
        if not out[key]:
            raise _bad(key, h.get(key), "at least one tensor")
    return out


def outputs_check(bindings: list, n: int) -> Callable[[list], None]:
    """The check of a ``predict`` answer's arrays: y0.. one per binding, its dtype, ``n`` samples, static dims."""

    def check(specs: list) -> None:
        if [s[0] for s in specs] != [f"y{k}" for k in range(len(bindings))]:
            raise _bad("the arrays", [s[0] for s in specs], f"{', '.join(f'y{k}' for k in range(len(bindings)))}")
        for (name, dtype, shape), b in zip(specs, bindings):
            want = [d for d in b.shape[1:]]
            fits = len(shape) == len(b.shape) and all(d < 0 or d == s for d, s in zip(want, shape[1:]))
            if dtype != b.dtype or not shape or shape[0] != n or not fits:
                raise _bad(
                    f"output {name} ({b.name})",
                    f"{dtype} {list(shape)}",
                    f"{b.dtype} [{n}, {', '.join('?' if d < 0 else str(d) for d in want)}]",
                )

    return check


def predicted(h: dict) -> dict:
    """A ``predict`` answer's header (its arrays checked by ``outputs_check``)."""
    if h.get("ok") is not True:
        raise _bad("instead of outputs", h, "{ok: true, batching, arrays y0..}")
    return {"ok": True, "batching": field(h, "batching", "text", limit=100)}


def latency(h: dict) -> dict:
    """A ``latency`` answer: raw timed calls (integers >= 0, at least one), cold start and peak RSS (finite)."""
    if h.get("latency") is not True:
        raise _bad("instead of latency", h, "{latency: true, times_ns, cold_start_ms, peak_rss_mb}")
    times = _list(h.get("times_ns"), "times_ns", MAX_TIMES)
    if not times or not all(_is_int(t) and 0 <= t < 1 << 62 for t in times):
        bad = next((t for t in times if not (_is_int(t) and 0 <= t < 1 << 62)), times)
        raise _bad("a timed call (times_ns)", bad, "at least one duration, each an integer >= 0 nanoseconds")
    return {
        "times_ns": times,
        "cold_start_ms": field(h, "cold_start_ms", "number"),
        "peak_rss_mb": field(h, "peak_rss_mb", "number"),
        "arena": field(h, "arena", "int", True),
    }


def probed(h: dict) -> dict:
    """A ``probe`` answer (check --device): ok, and the runtime's refusal when not."""
    if h.get("probed") is not True:
        raise _bad("instead of a probe verdict", h, "{probed: true, ok, error}")
    return {
        "ok": field(h, "ok", "bool"),
        "error": field(h, "error", "text", True, LONG_TEXT) or "",
        "arena": field(h, "arena", "int", True),
    }


def done(key: str) -> Callable[[dict], dict]:
    """The check of a ``closed`` / ``swept`` acknowledgement."""

    def check(h: dict) -> dict:
        if h.get(key) is not True:
            raise _bad(f"instead of {key}", h, f"{{{key}: true}}")
        return h

    return check
