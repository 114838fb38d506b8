"""Calibration of one float model with its representative samples split across processes; the same bytes.

TensorFlow's calibrator feeds one sample at a time through a logging interpreter (TFLite's builtin kernels, one
thread) and keeps a running min/max per tensor, which merges exactly over contiguous shards
(``calibration_merge``). So:

1. the parent feeds the first sample itself (through TensorFlow's own ``Calibrator``); when all samples at that
   pace would pay for a process start (``MIN_SHARD_SECONDS`` per shard), it starts the ``calibration_worker``
   processes at once — they load TensorFlow's compiled calibration wrapper (not TensorFlow) while it feeds on;
2. it times the second sample, chooses the number of shards (at most the CPUs: one interpreter thread each), splits
   the samples not yet fed evenly (so the parent, which fed two already, and each worker finish together), writes
   the workers' samples once to a memory-mapped file (in shared memory where there is some), gives each worker its
   contiguous range and feeds the first range itself;
3. it merges the calibrated models: same bytes everywhere but the min/max floats, folded in shard order.

Anything unexpected — a worker failing, calibrated models whose layouts differ (a branch run by some shards only),
samples of different shapes or with a signature key, Python-function op registerers, a model carrying state
from one sample to the next (a fused LSTM's variable tensors: the shards would start from another state), a model above
``MAX_SHARDED_MODEL_BYTES`` (each worker holds a copy) — gives None, and the caller calibrates sequentially as
TensorFlow does. ``EDGETOOL_CALIBRATION_WORKERS=1`` turns sharding off; ``=N`` sets the number of shards (default:
the CPUs this process may run on); ``EDGETOOL_CALIBRATION_SHARD_SECONDS`` replaces ``MIN_SHARD_SECONDS``. Every run
keeps the CPU seconds of each phase of the parent and of each worker (``Calibrated.phases``; ``report`` prints them
with ``EDGETOOL_VERBOSE``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.parsers.tflite_schema import enum_names, tflite_schema
from edge_tool.tflite_converter.calibration_merge import merge_ranges

MIN_SHARD_SECONDS = 1.0  # work per shard below which a worker's start (~0.3 s) and the merge do not pay
MAX_SHARDED_MODEL_BYTES = 256 << 20  # each worker holds the model and its interpreter: no sharding above this
_STATE_OPS = ("VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE")
_WORKER = "edge_tool.tflite_converter.calibration_worker"


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
    """Two stderr lines on how a calibration was split and its CPU seconds per phase, when ``EDGETOOL_VERBOSE`` is
    set (benchmarks, diagnosis)."""
    if os.environ.get("EDGETOOL_VERBOSE", "") not in ("", "0"):
        how = f"{done.shards} processes" if done.shards > 1 else "one process"
        why = f" (sharding fell back: {done.fell_back})" if done.fell_back else ""
        print(f"edgetool: calibration in {how}{why}", file=sys.stderr)
        print(f"edgetool: calibration phases {json.dumps(done.phases)}", file=sys.stderr)


def _min_shard_seconds() -> float:
    """``MIN_SHARD_SECONDS``, or ``EDGETOOL_CALIBRATION_SHARD_SECONDS`` (0 shards any model: tests, benchmarks)."""
    try:
        return max(1e-9, float(os.environ.get("EDGETOOL_CALIBRATION_SHARD_SECONDS", MIN_SHARD_SECONDS)))
    except ValueError:
        return MIN_SHARD_SECONDS


@dataclass(frozen=True)
class Calibrated:
    """A calibrated float model; ``shards`` processes fed its samples (1: the given calibrator fed them all, as
    TensorFlow does), ``fell_back`` says why a sharded attempt was redone sequentially (None when it was not),
    ``phases`` the ``(process, phase, seconds)`` of the run (CPU seconds unless the phase says wall)."""

    model: bytes
    shards: int = 1
    fell_back: str | None = None
    phases: tuple[tuple[str, str, float], ...] = ()


def calibrate(calibrator, model: bytes, input_gen: Callable, by_name: list[str]) -> Calibrated:
    """``model`` calibrated on ``input_gen``'s samples, byte-identical to ``calibrator.calibrate(input_gen)``.

    ``calibrator`` is a fresh ``tensorflow.lite.python.optimize.calibrator.Calibrator`` on ``model``. When the work
    was sharded (``shards`` > 1) its own statistics cover part of the samples: quantize from the returned model.
    """
    shards = _Shards(calibrator, model, input_gen, by_name, worker_count())
    try:
        cpu = time.process_time()
        mine = calibrator.calibrate(shards.parent_samples)
        shards.note("feed + Calibrate()", time.process_time() - cpu - shards.own_cpu)
        if not shards.used:
            return Calibrated(mine, phases=tuple(shards.phases))
        merged, problem = shards.merge(mine)
    finally:
        shards.close()
    if merged is None:
        from tensorflow.lite.python.optimize import calibrator as _calibrator

        cpu = time.process_time()
        fresh = _calibrator.Calibrator(model, by_name, [])
        again = fresh.calibrate(input_gen)
        shards.note("fallback: one-process calibration", time.process_time() - cpu)
        return Calibrated(again, 1, problem, tuple(shards.phases))
    return Calibrated(merged, len(shards.used) + 1, phases=tuple(shards.phases))


class _Shards:
    """The parent's sample stream; it starts the workers after the first sample (see the module doc)."""

    def __init__(self, calibrator, model: bytes, input_gen: Callable, by_name: list[str], count: int) -> None:
        self.calibrator, self.model, self.input_gen, self.by_name = calibrator, model, input_gen, by_name
        self.count = count
        self.workers: list[subprocess.Popen] = []  # started
        self.used: list[tuple[subprocess.Popen, int]] = []  # given a shard: (process, shard number)
        self.folder: tempfile.TemporaryDirectory | None = None
        self.phases: list[tuple[str, str, float]] = []
        self.own_cpu = 0.0  # the parent's CPU seconds in this class's own work during ``calibrate``

    def note(self, phase: str, seconds: float, process: str = "parent") -> None:
        """Keep one phase's seconds."""
        self.phases.append((process, phase, round(seconds, 4)))

    def _timed(self, phase: str, func: Callable, *args):
        cpu = time.process_time()
        result = func(*args)
        spent = time.process_time() - cpu
        self.own_cpu += spent
        self.note(phase, spent)
        return result

    def parent_samples(self):
        """Yield the parent's samples: all of them, or the first shard when the rest went to workers."""
        it = iter(self.input_gen())
        first = next(it, None)
        if first is None:
            return
        start = time.perf_counter()
        yield first
        first_cost = time.perf_counter() - start  # Prepare + one sample: at least one sample's cost
        samples = [first, *it]
        planned = self._timed("split decision", self._planned_shards, samples, first_cost)
        if planned < 2:
            yield from samples[1:]
            return
        try:
            self._timed("worker start (spawn)", self._start, planned - 1, _bytes(first) * len(samples))
        except OSError:  # no room for the model, or no process to start: the parent feeds every sample
            yield from samples[1:]
            return
        start = time.perf_counter()
        yield samples[1]
        shards = min(planned, self._shards_for(samples, time.perf_counter() - start))
        bounds = _bounds(len(samples), 2, shards)
        written = shards >= 2 and self._timed("samples to shared memory", self._write_samples, samples, bounds[1])
        bounds = bounds if written else [0, len(samples)]
        self._timed("shards handed out", self._hand_out, bounds)
        yield from samples[2 : bounds[1]]

    def _shards_for(self, samples: list, per_sample: float) -> int:
        return min(self.count, int(len(samples) * per_sample / _min_shard_seconds()), len(samples) // 2)

    def _planned_shards(self, samples: list, first_cost: float) -> int:
        if self.count < 2 or len(samples) < 4 or len(self.model) > MAX_SHARDED_MODEL_BYTES or _stateful(self.model):
            return 1
        return self._shards_for(samples, first_cost)

    def _write_samples(self, samples: list, start: int) -> bool:
        """Write samples ``start``.. (the workers' ones; the rows before stay unwritten holes) as one memory-mapped
        array per model input (the order ``Calibrator`` feeds them in); False when they cannot be sharded exactly
        (signature keys, other shapes or dtypes than the first one's)."""
        rows = []
        for sample in samples:
            if isinstance(sample, dict):
                row = self.calibrator._create_input_array_from_dict(None, sample)
            elif isinstance(sample, list):
                row = sample
            else:
                return False
            rows.append([np.asarray(a) for a in row])
        first = rows[0]
        if not all(
            len(r) == len(first) and all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(r, first))
            for r in rows
        ):
            return False
        try:
            for i, a in enumerate(first):
                out = np.lib.format.open_memmap(
                    Path(self.folder.name) / f"input{i}.npy", "w+", a.dtype, (len(rows), *a.shape)
                )
                for j in range(start, len(rows)):
                    out[j] = rows[j][i]
                out.flush()
                del out
        except OSError:  # no room: the parent feeds every sample (close() removes the part written)
            return False
        return True

    def _start(self, count: int, sample_bytes: int) -> None:
        """Start ``count`` workers on the model; each waits for its range on stdin. The model and the samples
        (``sample_bytes``) go to /dev/shm when it has twice their room (a container's is often 64 MB, and a full
        tmpfs kills a process writing a memory-mapped file), else to the temp dir."""
        from tensorflow.lite.python.optimize import calibrator as _calibrator

        so_path = _calibrator._calibration_wrapper.__file__
        need = 2 * (len(self.model) + sample_bytes)
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free >= need else None
        self.folder = tempfile.TemporaryDirectory(prefix="edgetool-calib-", dir=shm)
        folder = Path(self.folder.name)
        (folder / "model.tflite").write_bytes(bytes(self.model))
        (folder / "registerers.txt").write_text("".join(f"{n}\n" for n in self.by_name))
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        for k in range(1, count + 1):
            with (folder / f"log-{k}.txt").open("wb") as log:
                cmd = [sys.executable, "-m", _WORKER, so_path, str(folder), str(k)]
                self.workers.append(
                    subprocess.Popen(cmd, stdin=subprocess.PIPE, bufsize=0, stdout=log, stderr=log, env=env)
                )

    def _hand_out(self, bounds: list[int]) -> None:
        """Give worker k samples ``bounds[k]``..``bounds[k+1]``-1; dismiss the workers not needed."""
        for k, proc in enumerate(self.workers, 1):
            try:
                if k < len(bounds) - 1:
                    self.used.append((proc, k))  # before writing: a worker that died must fail the merge
                    proc.stdin.write(f"{bounds[k]} {bounds[k + 1]}\n".encode())
                proc.stdin.close()
            except BrokenPipeError:  # it died: merge() reports its exit code
                pass

    def merge(self, mine: bytes) -> tuple[bytes | None, str | None]:
        """(the parent's calibrated model merged with every worker's, None) or (None, why not)."""
        models, folder = [bytes(mine)], Path(self.folder.name)
        waited = time.perf_counter()
        for proc, k in self.used:
            code = proc.wait()
            out = folder / f"out-{k}.tflite"
            if code != 0 or not out.is_file():
                log = (folder / f"log-{k}.txt").read_text(errors="replace").strip().splitlines()
                return None, f"calibration worker {k} exited with {code}: {log[-1] if log else 'no output'}"
            models.append(out.read_bytes())
        self.note("idle wait for workers (wall)", time.perf_counter() - waited)
        for _, k in self.used:
            for phase, seconds in json.loads((folder / f"phases-{k}.json").read_text()).items():
                self.note(phase, seconds, f"worker {k}")
        merged = self._timed("range merge", merge_ranges, models)
        return merged, None if merged is not None else "the shards' calibrated models differ in layout"

    def close(self) -> None:
        """Stop any worker still running and remove the shard files."""
        for proc in self.workers:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if self.folder is not None:
            self.folder.cleanup()


def _bytes(sample) -> int:
    """The bytes of one sample's arrays (a dict or list of them)."""
    values = sample.values() if isinstance(sample, dict) else sample if isinstance(sample, list) else [sample]
    return sum(np.asarray(v).nbytes for v in values)


def _bounds(count: int, fed: int, shards: int) -> list[int]:
    """Contiguous shard bounds over ``count`` samples of which the parent (shard 0) fed ``fed`` already: the rest
    split evenly, so that the parent and each worker finish together."""
    rest = count - fed
    return [0, *(fed + round(i * rest / shards) for i in range(1, shards + 1))]


def _stateful(model: bytes) -> bool:
    """True when a sample's ranges may depend on the samples before it: variable tensors (a fused LSTM's state, which
    the calibrator does not reset between samples) or a resource-variable op code (read in place, nothing unpacked)."""
    schema = tflite_schema()
    root = schema.Model.GetRootAs(bytes(model), 0)
    names = enum_names(schema.BuiltinOperator)
    for i in range(root.OperatorCodesLength()):
        code = root.OperatorCodes(i)
        if names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) in _STATE_OPS:
            return True
    graphs = (root.Subgraphs(g) for g in range(root.SubgraphsLength()))
    return any(graph.Tensors(t).IsVariable() for graph in graphs for t in range(graph.TensorsLength()))
