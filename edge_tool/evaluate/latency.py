"""Latency: an honest timing loop (set_tensor + invoke + get_tensor of one batch-1 sample) and its statistics.

For each .tflite artefact the loop runs in a fresh Python process (``latency_worker``) so that cold start
and peak RSS belong to that model alone, not to the TensorFlow already loaded by the evaluator.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.rows import LatencyStats
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.isolated import death_reason
from edge_tool.litert.runtime import interpreter_class
from edge_tool.litert.timing import fit_inputs, tflite_step, time_loop

MAX_SAMPLES_KEPT = 2000  # raw times kept for the report's plots


def summarize(times_ns: list[int] | np.ndarray, cold_start_ms: float | None) -> LatencyStats:
    """p50/p90/p99/mean/std in milliseconds of the timed calls, plus the cold start and (some of) the raw times."""
    ms = np.asarray(times_ns, dtype=np.float64) / 1e6
    p50, p90, p99 = (float(v) for v in np.percentile(ms, [50, 90, 99]))
    kept = ms if len(ms) <= MAX_SAMPLES_KEPT else ms[np.linspace(0, len(ms) - 1, MAX_SAMPLES_KEPT).astype(int)]
    return LatencyStats(
        p50=p50,
        p90=p90,
        p99=p99,
        mean=float(ms.mean()),
        std=float(ms.std()),
        cold_start=cold_start_ms,
        runs=len(ms),
        samples_ms=tuple(round(float(v), 5) for v in kept),
    )


def measure_tflite(
    model_path: Path,
    feeds: dict[int, np.ndarray],
    output_indices: list[int],
    threads: int,
    warmup: int,
    runs: int | None,
    time_budget_s: float | None,
) -> LatencyStats:
    """Cold start (load + allocate + first inference) then the timed loop, in this process.

    Inputs are resized to the feeds' shapes where the model's differ (dynamic dims); a model with recurrent
    state has it reset before every call.
    """
    facts = read_flatbuffer(Path(model_path))
    stateful = facts.stateful
    cls, _ = interpreter_class(facts.flex)
    t0 = time.perf_counter_ns()
    interp = cls(model_path=str(model_path), num_threads=threads)
    fit_inputs(interp, feeds)
    step = tflite_step(interp, feeds, output_indices, reset_state=stateful)
    step()
    cold_ms = (time.perf_counter_ns() - t0) / 1e6
    return summarize(time_loop(step, warmup, runs, time_budget_s), cold_ms)


class LatencyProcess:
    """A fresh process for one latency run, started ahead of time.

    Its imports (numpy, LiteRT) happen as soon as it starts, while other work runs; it then waits for its one
    request on stdin, so the timed part and its peak RSS are still the model's alone.
    """

    _ahead: list[LatencyProcess] = []  # started by start_ahead, before the caller knew it would need them

    @classmethod
    def start_ahead(cls, count: int) -> None:
        """Start ``count`` processes now, for ``take`` to hand out: eval starts them before it imports TensorFlow
        (one core, seconds), so their imports run on a core that would idle instead of during the accuracy pass.
        One never taken reads the end of its stdin when this process ends, and exits."""
        cls._ahead.extend(cls() for _ in range(count - len(cls._ahead)))

    @classmethod
    def take(cls) -> LatencyProcess:
        """A process started ahead (and still waiting), else a new one."""
        while cls._ahead:
            proc = cls._ahead.pop(0)
            if proc._proc.poll() is None:
                return proc
        return cls()

    def __init__(self):
        self._proc = subprocess.Popen(
            module_command("edge_tool.evaluate.latency_worker", "-"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def measure(
        self,
        model_path: Path,
        feeds: dict[int, np.ndarray],
        output_indices: list[int],
        threads: int,
        warmup: int,
        runs: int | None,
        time_budget_s: float | None,
    ) -> tuple[LatencyStats, float]:
        """measure_tflite in this process; (stats, its peak RSS in MB). RuntimeFailure if LiteRT dies on it."""
        with tempfile.TemporaryDirectory(prefix="edgetool-lat-") as tmp:
            feeds_path = Path(tmp) / "feeds.npz"
            np.savez(feeds_path, **{f"t{i}": v for i, v in feeds.items()})
            request = {
                "model": str(Path(model_path).resolve()),  # a process started ahead may have another cwd
                "feeds": str(feeds_path),
                "outputs": list(output_indices),
                "threads": threads,
                "warmup": warmup,
                "runs": runs,
                "time_budget_s": time_budget_s,
            }
            out, err = self._proc.communicate(json.dumps(request) + "\n")
        if self._proc.returncode != 0:
            raise RuntimeFailure(f"latency run: {death_reason(self._proc.returncode, err, 'LiteRT')}")
        result = json.loads(out.strip().splitlines()[-1])
        return LatencyStats.from_dict(result["latency"]), float(result["peak_rss_mb"])

    def close(self) -> None:
        """Stop the process if it was never used (idempotent)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.communicate()


def measure_tflite_subprocess(
    model_path: Path,
    feeds: dict[int, np.ndarray],
    output_indices: list[int],
    threads: int,
    warmup: int,
    runs: int | None,
    time_budget_s: float | None,
) -> tuple[LatencyStats, float]:
    """measure_tflite in a fresh process; returns (stats, peak RSS of that process in MB)."""
    proc = LatencyProcess()
    try:
        return proc.measure(model_path, feeds, output_indices, threads, warmup, runs, time_budget_s)
    finally:
        proc.close()


def peak_rss_mb() -> float:
    """Peak resident set size of this process image so far, in MB.

    Linux: VmHWM from /proc/self/status (getrusage's ru_maxrss would include the RSS of the parent that forked
    the worker, since Linux carries it across fork+exec). Elsewhere: getrusage ru_maxrss.
    """
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / (1024.0 * 1024.0)
