"""TFLM's own verdict on a model, from its Python interpreter run in a child process (``worker``).

- ``unsupported_ops``: what TFLM refuses when it allocates the model with a generous arena (ops it has no kernel
  for, kernels that reject the model's types), parsed from TFLM's own log.
- ``measure_arena``: the smallest tensor arena that allocates and invokes, by binary search, plus a margin.
"""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from edge_tool.core.childproc import module_command
from edge_tool.core.env import installed_version
from edge_tool.errors import ModelError, UsageError
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.schemas.records import ARENA_MARGIN, ArenaSize

ALIGN = 16  # TFLM aligns arena allocations to 16 bytes; search at that granularity
GENEROUS_ARENA = 4 << 20  # first try: enough for any model a microcontroller can hold
MAX_ARENA = 256 << 20  # give up above this (no microcontroller has it)
PROBE_TIMEOUT_S = 120

_NO_OP = re.compile(r"Didn't find op for builtin opcode '([^']+)'")
_NO_REG = re.compile(r"Failed to get registration from op code (\S+)")
_PREPARE = re.compile(r"Node (\S+) \(number (\d+)\) failed to (prepare|invoke)")
_RECORDED = re.compile(r"Arena allocation total (\d+) bytes")


@dataclass(frozen=True)
class Probe:
    """One TFLM run: did it allocate and invoke, TFLM's log, bytes TFLM recorded, whether the child crashed."""

    ok: bool
    log: str
    recorded_bytes: int | None
    crashed: bool


def tflm_version() -> str:
    """Version of the installed tflite-micro package."""
    return installed_version("tflite-micro") or "not installed"


def require_tflm() -> None:
    """Raise a UsageError saying how to get the tflite-micro package when it is not installed."""
    if importlib.util.find_spec("tflite_micro") is None:
        raise UsageError("TFLite Micro support needs the tflite-micro package: pip install tflite-micro")


def probe(model_path: Path, arena: int) -> Probe:
    """Allocate and invoke ``model_path`` in TFLM with an ``arena``-byte arena, in a child process."""
    cmd = module_command("edge_tool.micro.worker", "probe", model_path, int(arena))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Probe(False, f"TFLM did not finish within {PROBE_TIMEOUT_S} s", None, True)
    recorded = _RECORDED.search(proc.stderr)
    ok = proc.returncode == 0 and '"ok": true' in proc.stdout
    return Probe(ok, proc.stderr, int(recorded.group(1)) if recorded else None, proc.returncode < 0)


def custom_codes(model: bytes) -> list[str]:
    """Custom op names of the model in first-use order (TFLM logs only 'CUSTOM' for them)."""
    return [op for op in summarize_tflite(model).ops if not op.isupper()]


def refusals(model_path: Path, log: str) -> list[tuple[str, str]]:
    """(op, reason) pairs TFLM's log gives for refusing the model (ops without a kernel, kernels failing prepare)."""
    found: dict[str, str] = {}
    for op in _NO_OP.findall(log):
        found[op] = "TFLM has no kernel for this builtin op"
    if _NO_REG.search(log) and any(m == "CUSTOM" for m in _NO_REG.findall(log)):
        for op in custom_codes(Path(model_path).read_bytes()):
            found.setdefault(op, "custom op: TFLM registers none by this name (Flex/TF ops never run on TFLM)")
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        m = _PREPARE.match(line)
        if m:
            detail = "; ".join(ln for ln in lines[max(0, i - 2) : i] if not _PREPARE.match(ln))
            found.setdefault(
                m.group(1),
                f"TFLM's kernel failed to {m.group(3)} node {m.group(2)}" + (f": {detail}" if detail else ""),
            )
    return sorted(found.items())


def unsupported_ops(model_path: Path) -> tuple[list[tuple[str, str]], Probe]:
    """(op, reason) for everything TFLM refuses in the model (empty if it runs), and the probe itself."""
    size = Path(model_path).stat().st_size
    result = probe(model_path, max(GENEROUS_ARENA, 4 * size))
    if result.ok:
        return [], result
    found = refusals(model_path, result.log)
    if not found:
        tail = " ".join(result.log.strip().splitlines()[-4:])[:600] or "no message"
        why = "the TFLM interpreter crashed" if result.crashed else "TFLM refused the model"
        found = [("(model)", f"{why}: {tail}")]
    return found, result


def recommended_arena(minimum: int) -> int:
    """Minimum + ARENA_MARGIN, rounded up to 1 KiB.

    The margin covers what the host measurement cannot see: optimized kernels (CMSIS-NN, ESP-NN) that ask for
    scratch buffers the reference kernels measured here do not, and other TFLM versions. (Host pointers are 8
    bytes, a Cortex-M's 4, so TFLM's own structs take less on the board than measured here.)
    """
    return int(math.ceil(minimum * (1 + ARENA_MARGIN) / 1024) * 1024)


def measure_arena(model_path: Path) -> ArenaSize:
    """Smallest arena (16-byte steps) with which TFLM allocates and invokes the model; ModelError if none does.

    Starts from a generous arena (which must work), then from the total TFLM's recording allocator reports there:
    usually that total works and 16 bytes less does not (three probes); otherwise doubling from it finds an upper
    bound and a binary search the minimum.
    """
    top = probe(model_path, max(GENEROUS_ARENA, 4 * Path(model_path).stat().st_size))
    if not top.ok:
        ops, _ = unsupported_ops(model_path)
        raise ModelError(f"TFLM cannot run {model_path}: " + "; ".join(f"{o}: {r}" for o, r in ops))
    lo, hi = 0, max(GENEROUS_ARENA, 4 * Path(model_path).stat().st_size)  # (largest known-bad, smallest known-good]
    if top.recorded_bytes and top.recorded_bytes < hi:
        lo, hi, top = _bracket(model_path, top.recorded_bytes, hi, top)
    while hi - lo > ALIGN:
        mid = (lo + (hi - lo) // 2) // ALIGN * ALIGN
        if mid <= lo:
            break
        attempt = probe(model_path, mid)
        if attempt.ok:
            hi, top = mid, attempt
        else:
            lo = mid
    return ArenaSize(hi, top.recorded_bytes, recommended_arena(hi))


def _bracket(model_path: Path, recorded: int, hi: int, top: Probe) -> tuple[int, int, Probe]:
    """(known-bad, known-good, probe at known-good) around the minimum, starting at TFLM's recorded total."""
    guess = int(math.ceil(recorded / ALIGN) * ALIGN)
    at = probe(model_path, guess)
    if at.ok:
        below = probe(model_path, guess - ALIGN)
        return (0, guess - ALIGN, below) if below.ok else (guess - ALIGN, guess, at)
    lo, step = guess, guess
    while lo + step < hi:
        attempt = probe(model_path, lo + step)
        if attempt.ok:
            return lo, lo + step, attempt
        lo, step = lo + step, step * 2
    return lo, hi, top
