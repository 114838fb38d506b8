"""Where LiteRT.js's model.run time goes, for bench_litertjs.py --profile: a V8 CPU profile (Chrome DevTools
Protocol, 100 µs sampling) of repeated model.run calls, split into wasm code, JavaScript and the rest, and a census
of the SIMD instructions in the hottest wasm functions (read from the build's .wasm code section: the builds carry no
function names, so a function is known by its index and by what it computes with).

Relaxed-SIMD opcodes counted: f32x4.relaxed_madd (fused multiply-add), i32x4.relaxed_dot_i8x16_i7x16_add_s (int8
dot product); SIMD128 ones: f32x4.mul/add and i32x4.dot_i16x8_s (int8 widened to int16, then multiplied pairwise).
"""

from __future__ import annotations

import collections
from pathlib import Path

OPS = {
    0x105: "f32x4.relaxed_madd",
    0x113: "i32x4.relaxed_dot_i8x16_i7x16_add_s",
    0x112: "i16x8.relaxed_dot_i8x16_i7x16_s",
    0xBA: "i32x4.dot_i16x8_s",
    0xE6: "f32x4.mul",
    0xE4: "f32x4.add",
}
NAMED = ("(garbage collector)", "(program)", "(idle)")


def _leb(b: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _sections(b: bytes) -> dict[int, tuple[int, int]]:
    i, out = 8, {}
    while i < len(b):
        sid = b[i]
        size, i = _leb(b, i + 1)
        out.setdefault(sid, (i, size))
        i += size
    return out


def _imported_functions(b: bytes, start: int) -> int:
    count, i = _leb(b, start)
    funcs = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            n, i = _leb(b, i)
            i += n
        kind, i = b[i], i + 1
        if kind == 0:
            _, i = _leb(b, i)
            funcs += 1
        elif kind == 1:  # table: element type, limits
            flags, i = b[i + 1], i + 2
            _, i = _leb(b, i)
            if flags & 1:
                _, i = _leb(b, i)
        elif kind == 2:  # memory: limits
            flags, i = b[i], i + 1
            _, i = _leb(b, i)
            if flags & 1:
                _, i = _leb(b, i)
        elif kind == 3:  # global: type, mutability
            i += 2
        else:  # tag
            i += 1
            _, i = _leb(b, i)
    return funcs


def _bodies(wasm: Path) -> dict[int, bytes]:
    """{function index: body bytes} of every function defined in ``wasm``."""
    b = wasm.read_bytes()
    sec = _sections(b)
    first = _imported_functions(b, sec[2][0]) if 2 in sec else 0
    count, i = _leb(b, sec[10][0])
    bodies = {}
    for k in range(count):
        size, i = _leb(b, i)
        bodies[k + first] = b[i : i + size]
        i += size
    return bodies


def _ops(body: bytes) -> dict[str, int]:
    ops, j = collections.Counter(), 0
    while j < len(body) - 1:
        if body[j] == 0xFD:
            op, j = _leb(body, j + 1)
            if op in OPS:
                ops[OPS[op]] += 1
        else:
            j += 1
    return dict(ops)


def simd_census(wasm: Path, indices: list[int]) -> tuple[dict[int, dict[str, int]], int]:
    """({function index: {opcode name: count}} for ``indices`` (a byte scan of each body), number of functions in the
    whole module that use the relaxed int8 dot product)."""
    bodies = _bodies(wasm)
    dot = sum(1 for body in bodies.values() if _ops(body).get("i32x4.relaxed_dot_i8x16_i7x16_add_s"))
    return {i: _ops(bodies[i]) for i in indices if i in bodies}, dot


def cpu_profile(ctx, page, runs: int = 40) -> tuple[dict[str, float], list[tuple[int, float]]]:
    """(share of samples per category: wasm / js / GC / ..., [(wasm function index, share of wasm samples)])."""
    cdp = ctx.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 100})
    cdp.send("Profiler.start")
    page.evaluate("(n) => window.__runMany(n)", runs)
    prof = cdp.send("Profiler.stop")["profile"]
    nodes = {n["id"]: n["callFrame"] for n in prof["nodes"]}
    cats, funcs = collections.Counter(), collections.Counter()
    for node_id, n in collections.Counter(prof["samples"]).items():
        name = nodes[node_id]["functionName"]
        if name.startswith("wasm-function["):
            cats["wasm"] += n
            funcs[int(name[len("wasm-function[") : -1])] += n
        else:
            cats[name if name in NAMED else "JavaScript"] += n
    total, wasm = sum(cats.values()) or 1, cats["wasm"] or 1
    return ({k: v / total for k, v in cats.most_common()}, [(f, n / wasm) for f, n in funcs.most_common(3)])
