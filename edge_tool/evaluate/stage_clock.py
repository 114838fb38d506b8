"""Wall and CPU seconds per stage of ``run_eval``: the wall seconds go to the report's ``timings_s``; the CPU seconds
of eval's whole process tree (itself, its live workers, the children it has reaped) are kept beside them and printed
to stderr with ``EDGETOOL_VERBOSE`` — figures that stay meaningful on a loaded machine (benchmarks, diagnosis)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def tree_cpu() -> float:
    """User + system CPU seconds of this process, its live descendants and every child it has waited for."""
    import psutil  # noqa: PLC0415

    total = time.process_time()
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total += reaped.ru_utime + reaped.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended between the listing and the read: counted once reaped
            continue
        total += times.user + times.system
    return total


class StageClock:
    """Wall and CPU seconds per stage (``stages``; ``cpu``: [whole tree, this process alone]), each stage closed by
    :meth:`mark`."""

    def __init__(self) -> None:
        self._t, self._c, self._s = time.perf_counter(), tree_cpu(), time.process_time()
        self.stages: dict[str, float] = {}
        self.cpu: dict[str, list[float]] = {"before run_eval (Python start, imports)": [round(self._s, 3)] * 2}

    def mark(self, stage: str) -> None:
        """Close ``stage`` at now."""
        t, c, s = time.perf_counter(), tree_cpu(), time.process_time()
        self.stages[stage] = round(t - self._t, 3)
        self.cpu[stage] = [round(c - self._c, 3), round(s - self._s, 3)]
        self._t, self._c, self._s = t, c, s

    def report(self) -> None:
        """One stderr line of the CPU seconds per stage ([tree, this process]) and the wall seconds, when
        ``EDGETOOL_VERBOSE`` is set."""
        if os.environ.get("EDGETOOL_VERBOSE", "") not in ("", "0"):
            print(
                f"edgetool: eval stages CPU s {json.dumps(self.cpu)} wall s {json.dumps(self.stages)}", file=sys.stderr
            )
