"""Calibration of one float model with its representative samples split across processes; the same bytes.

TensorFlow's calibrator feeds one sample at a time through a logging interpreter (TFLite's builtin kernels, one
thread) and keeps, per tensor, a running ``std::min``/``std::max`` over every value it sees
(``calibration_logger.cc``: ``min_ = std::min(min_, v)``, NaN skipped); ``Calibrate()`` writes those two floats into
each tensor's quantization parameters of the float model, and the quantizer reads them from there. A running
min/max over samples in order equals the same fold over contiguous shards' results taken in shard order (with
``std::min``'s keep-the-first-on-ties, so even -0.0 against 0.0 resolves as it would have), so:

1. the parent feeds the first two samples itself (through TensorFlow's own ``Calibrator``) and times the second;
2. when the rest would take long enough to pay for a process start (``MIN_SHARD_SECONDS`` per shard), it splits
   all samples into contiguous shards, keeps the first and hands each other one to a ``calibration_worker``
   process (TensorFlow's same compiled wrapper, loaded without TensorFlow);
3. it merges the calibrated models: same bytes everywhere but the min/max floats, folded in shard order.

Anything unexpected — a worker failing, calibrated models whose layouts differ (a branch run by some shards only),
samples of different shapes or with a signature key, Python-function op registerers, a model carrying state
from one sample to the next (a fused LSTM's variable tensors: the shards would start from another state), a model above
``MAX_SHARDED_MODEL_BYTES`` (each worker holds a copy) — gives None, and the caller calibrates sequentially as
TensorFlow does. ``EDGETOOL_CALIBRATION_WORKERS=1`` turns sharding off; ``=N`` sets the number of shards (default:
the CPUs this process may run on); ``EDGETOOL_CALIBRATION_SHARD_SECONDS`` replaces ``MIN_SHARD_SECONDS``.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.parsers.tflite_schema import tflite_schema

MIN_SHARD_SECONDS = 1.0  # work per shard below which a worker's start (~0.3 s) and the merge do not pay
MAX_SHARDED_MODEL_BYTES = 256 << 20  # each worker holds the model and its interpreter: no sharding above this
_STATE_OPS = ("VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE")


def worker_count() -> int:
    """How many shards (the parent's included) a calibration may use: ``EDGETOOL_CALIBRATION_WORKERS`` or the CPUs."""
    raw = os.environ.get("EDGETOOL_CALIBRATION_WORKERS", "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def report(done: Calibrated) -> None:
    """One stderr line on how a calibration was split, when ``EDGETOOL_VERBOSE`` is set (benchmarks, diagnosis)."""
    if os.environ.get("EDGETOOL_VERBOSE", "") not in ("", "0"):
        how = f"{done.shards} processes" if done.shards > 1 else "one process"
        why = f" (sharding fell back: {done.fell_back})" if done.fell_back else ""
        print(f"edgetool: calibration in {how}{why}", file=sys.stderr)


def _min_shard_seconds() -> float:
    """``MIN_SHARD_SECONDS``, or ``EDGETOOL_CALIBRATION_SHARD_SECONDS`` (0 shards any model: tests, benchmarks)."""
    try:
        return max(1e-9, float(os.environ.get("EDGETOOL_CALIBRATION_SHARD_SECONDS", MIN_SHARD_SECONDS)))
    except ValueError:
        return MIN_SHARD_SECONDS


@dataclass(frozen=True)
class Calibrated:
    """A calibrated float model; ``shards`` processes fed its samples (1: the given calibrator fed them all, as
    TensorFlow does), ``fell_back`` says why a sharded attempt was redone sequentially (None when it was not)."""

    model: bytes
    shards: int = 1
    fell_back: str | None = None


def calibrate(calibrator, model: bytes, input_gen: Callable, by_name: list[str]) -> Calibrated:
    """``model`` calibrated on ``input_gen``'s samples, byte-identical to ``calibrator.calibrate(input_gen)``.

    ``calibrator`` is a fresh ``tensorflow.lite.python.optimize.calibrator.Calibrator`` on ``model``. When the work
    was sharded (``shards`` > 1) its own statistics cover part of the samples: quantize from the returned model.
    """
    shards = _Shards(calibrator, model, input_gen, by_name, worker_count())
    try:
        mine = calibrator.calibrate(shards.parent_samples)
        if not shards.workers:
            return Calibrated(mine)
        merged, problem = shards.merge(mine)
    finally:
        shards.close()
    if merged is None:
        from tensorflow.lite.python.optimize import calibrator as _calibrator

        fresh = _calibrator.Calibrator(model, by_name, [])
        return Calibrated(fresh.calibrate(input_gen), 1, problem)
    return Calibrated(merged, len(shards.workers) + 1)


class _Shards:
    """The parent's sample stream; it starts the workers after timing the second sample (see the module doc)."""

    def __init__(self, calibrator, model: bytes, input_gen: Callable, by_name: list[str], count: int) -> None:
        self.calibrator, self.model, self.input_gen, self.by_name, self.count = (
            calibrator,
            model,
            input_gen,
            by_name,
            count,
        )
        self.workers: list[tuple[subprocess.Popen, Path]] = []
        self.folder: tempfile.TemporaryDirectory | None = None

    def parent_samples(self):
        """Yield the parent's samples: all of them, or the first shard when the rest went to workers."""
        it = iter(self.input_gen())
        head = []
        for sample in it:
            head.append(sample)
            yield sample
            if len(head) == 1:
                start = time.perf_counter()
            elif len(head) == 2:
                break
        if len(head) < 2 or self.count < 2 or len(self.model) > MAX_SHARDED_MODEL_BYTES or _stateful(self.model):
            yield from it
            return
        per_sample = time.perf_counter() - start
        rest = list(it)
        samples = head + rest
        shards = min(self.count, int(len(samples) * per_sample / _min_shard_seconds()), len(samples) // 2)
        arrays = self._positional(samples) if shards >= 2 else None
        if arrays is None:
            yield from rest
            return
        bounds = [round(i * len(samples) / shards) for i in range(shards + 1)]
        self._start(arrays, bounds)
        yield from samples[2 : bounds[1]]

    def _positional(self, samples: list) -> list[np.ndarray] | None:
        """The samples as one stacked array per model input (the order ``Calibrator`` feeds them in), or None when
        they cannot be sharded exactly (signature keys, other shapes or dtypes than the first sample's)."""
        rows = []
        for sample in samples:
            if isinstance(sample, dict):
                row = self.calibrator._create_input_array_from_dict(None, sample)
            elif isinstance(sample, list):
                row = sample
            else:
                return None
            rows.append([np.asarray(a) for a in row])
        first = rows[0]
        same = all(
            len(r) == len(first) and all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(r, first))
            for r in rows
        )
        return [np.stack([r[i] for r in rows]) for i in range(len(first))] if same else None

    def _start(self, arrays: list[np.ndarray], bounds: list[int]) -> None:
        from tensorflow.lite.python.optimize import calibrator as _calibrator

        so_path = _calibrator._calibration_wrapper.__file__
        self.folder = tempfile.TemporaryDirectory(prefix="edgetool-calib-")
        folder = Path(self.folder.name)
        (folder / "model.tflite").write_bytes(bytes(self.model))
        (folder / "registerers.txt").write_text("".join(f"{n}\n" for n in self.by_name))
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        for k in range(1, len(bounds) - 1):
            lo, hi = bounds[k], bounds[k + 1]
            np.savez(folder / f"shard-{k}.npz", **{f"input{i}": a[lo:hi] for i, a in enumerate(arrays)})
            log = (folder / f"log-{k}.txt").open("wb")
            cmd = [sys.executable, "-m", "edge_tool.tflite_converter.calibration_worker", so_path, str(folder), str(k)]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
            log.close()
            self.workers.append((proc, folder / f"out-{k}.tflite"))

    def merge(self, mine: bytes) -> tuple[bytes | None, str | None]:
        """(the parent's calibrated model merged with every worker's, None) or (None, why not)."""
        models = [bytes(mine)]
        for k, (proc, out) in enumerate(self.workers, 1):
            code = proc.wait()
            if code != 0 or not out.is_file():
                log = (out.parent / f"log-{k}.txt").read_text(errors="replace").strip().splitlines()
                return None, f"calibration worker {k} exited with {code}: {log[-1] if log else 'no output'}"
            models.append(out.read_bytes())
        merged = merge_ranges(models)
        return merged, None if merged is not None else "the shards' calibrated models differ in layout"

    def close(self) -> None:
        """Stop any worker still running and remove the shard files."""
        for proc, _ in self.workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.folder is not None:
            self.folder.cleanup()


def _stateful(model: bytes) -> bool:
    """True when a sample's ranges may depend on the samples before it: variable tensors (a fused LSTM's state,
    which the calibrator does not reset between samples) or resource variables."""
    summary = summarize_tflite(bytes(model))
    return summary.variable_tensors > 0 or any(op in summary.ops for op in _STATE_OPS)


def merge_ranges(models: list[bytes]) -> bytes | None:
    """The first calibrated model with each tensor's min (max) folded over all models in order, keeping the first
    on ties as ``std::min`` (``std::max``) does; None unless the models are byte-equal outside those floats."""
    slots = [_range_slots(m) for m in models]
    if any(len(m) != len(models[0]) or s != slots[0] for m, s in zip(models, slots)):
        return None
    mins, maxs = slots[0]
    if not _equal_outside(models, sorted(mins + maxs)):
        return None
    out = bytearray(models[0])
    for pos in mins:
        _fold(out, models, pos, lambda new, cur: new < cur)
    for pos in maxs:
        _fold(out, models, pos, lambda new, cur: cur < new)
    return bytes(out)


def _fold(out: bytearray, models: list[bytes], pos: int, better: Callable) -> None:
    best = models[0][pos : pos + 4]
    for m in models[1:]:
        candidate = m[pos : pos + 4]
        if better(struct.unpack("<f", candidate)[0], struct.unpack("<f", best)[0]):
            best = candidate
    out[pos : pos + 4] = best


def _range_slots(data: bytes) -> tuple[list[int], list[int]]:
    """Byte offsets of every float of every tensor's quantization min and max vectors."""
    schema = tflite_schema()
    model = schema.Model.GetRootAs(data, 0)
    mins, maxs = [], []
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for t in range(graph.TensorsLength()):
            q = graph.Tensors(t).Quantization()
            if q is None:
                continue
            for field, length, slots in ((4, q.MinLength(), mins), (6, q.MaxLength(), maxs)):
                if length:
                    start = q._tab.Vector(q._tab.Offset(field))
                    slots.extend(start + 4 * j for j in range(length))
    return mins, maxs


def _equal_outside(models: list[bytes], slots: list[int]) -> bool:
    """True when every model equals the first outside the 4-byte ``slots``."""
    views = [memoryview(m) for m in models]
    edges = [0, *[p for s in slots for p in (s, s + 4)], len(models[0])]
    for lo, hi in zip(edges[0::2], edges[1::2]):
        if any(v[lo:hi] != views[0][lo:hi] for v in views[1:]):
            return False
    return True
