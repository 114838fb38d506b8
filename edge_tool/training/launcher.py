"""Start N local MultiWorkerMirroredStrategy worker processes on loopback ports and supervise them.

The chief (task 0) saves into the atomic output dir; the other workers save into scratch dirs that are
removed afterwards. The chief's per-epoch lines are streamed; if any worker fails, the others are killed,
the output is not created, and the error carries that worker's stderr tail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from edge_tool.core.childproc import module_command
from edge_tool.core.fsutil import atomic_dir
from edge_tool.core.signals import deferred
from edge_tool.core.textsafe import visible
from edge_tool.errors import EdgeToolError
from edge_tool.training.config import TrainConfig, TrainResult

WORKER_TIMEOUT_S = 1800.0
STDERR_TAIL_LINES = 25
_TF_NOISE = re.compile(
    r"^([IW]\d{4} \d\d:|WARNING: All log messages before|.*(Unable to register|cuInit|cuda_|computation placer))"
)


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (held open together so they differ, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen
    stderr_path: Path
    status_path: Path


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no stderr captured)"
    all_lines = [ln for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in all_lines if not _TF_NOISE.match(ln)]  # drop TF's C++ start-up chatter
    kept = (useful or all_lines)[-lines:]
    return "\n".join(kept) if kept else "(stderr was empty)"


def _pump(stream: IO[str], verbose: bool) -> None:
    for line in stream:
        if verbose:
            print(visible(line.rstrip("\n")), flush=True)  # the worker prints the model's own names


def _start_workers(config: TrainConfig, chief_dir: Path, scratch: Path) -> list[_Worker]:
    ports = free_ports(config.workers)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    workers: list[_Worker] = []
    try:
        for i in range(config.workers):
            with deferred():  # a stop signal cannot fall between starting the process and recording it
                workers.append(_start_worker(config, i, cluster, chief_dir, scratch))
    except BaseException:
        _kill_all(workers)
        raise
    return workers


def _start_worker(config: TrainConfig, i: int, cluster: dict, chief_dir: Path, scratch: Path) -> _Worker:
    """Write worker ``i``'s spec and start it with its own TF_CONFIG; only the chief's stdout is piped."""
    save_dir = chief_dir if i == 0 else scratch / f"worker{i}-model"
    spec = {
        "config": {**config.to_dict(), "verbose": config.verbose and i == 0},
        "save_dir": str(save_dir),
        "status_file": str(scratch / f"worker{i}.json"),
        "is_chief": i == 0,
    }
    spec_path = scratch / f"worker{i}-spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {
        **os.environ,
        "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
        "TF_USE_LEGACY_KERAS": "1",
        "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
    }
    stderr_path = scratch / f"worker{i}.stderr"
    stdout = subprocess.PIPE if i == 0 else subprocess.DEVNULL
    with stderr_path.open("w") as err:
        proc = subprocess.Popen(
            module_command("edge_tool.training.worker", spec_path, unbuffered=True),
            stdout=stdout,
            stderr=err,
            env=env,
            text=True,
        )
    return _Worker(i, proc, stderr_path, scratch / f"worker{i}.json")


def _kill_all(workers: list[_Worker]) -> None:
    for w in workers:
        if w.proc.poll() is None:
            w.proc.kill()
    for w in workers:
        w.proc.wait()


def _supervise(workers: list[_Worker], verbose: bool) -> None:
    """Wait for every worker; on the first failure (or the timeout) kill the rest and raise."""
    pump = threading.Thread(target=_pump, args=(workers[0].proc.stdout, verbose), daemon=True)
    pump.start()
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    try:
        while True:
            codes = [w.proc.poll() for w in workers]
            failed = [w for w, c in zip(workers, codes) if c not in (None, 0)]
            if failed:
                w = failed[0]
                _kill_all(workers)
                raise EdgeToolError(
                    f"multiworker training failed: worker {w.index} (pid {w.proc.pid}) exited with code "
                    f"{w.proc.returncode}; the other {len(workers) - 1} worker(s) were stopped and nothing was "
                    f"written. Its stderr ends with:\n{_tail(w.stderr_path)}"
                )
            if all(c == 0 for c in codes):
                break
            if time.monotonic() > deadline:
                _kill_all(workers)
                raise EdgeToolError(
                    f"multiworker training did not finish within {WORKER_TIMEOUT_S:.0f}s; all workers were "
                    f"stopped and nothing was written. Worker 0 stderr ends with:\n{_tail(workers[0].stderr_path)}"
                )
            time.sleep(0.1)
    finally:
        _kill_all(workers)
        pump.join(timeout=5)


def train_local_cluster(config: TrainConfig) -> TrainResult:
    """Train with ``config.workers`` local worker processes; the chief's SavedModel lands in ``output_dir``."""
    start = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="edgetool-mw-"))
    try:
        with atomic_dir(config.output_dir, config.force) as tmp:
            workers = _start_workers(config, tmp, scratch)
            _supervise(workers, config.verbose)
            statuses = [json.loads(w.status_path.read_text()) for w in workers]
            seconds = time.perf_counter() - start
            report_path = tmp / "train.json"
            report = json.loads(report_path.read_text())
            report["seconds"] = seconds
            report["workers"] = [{k: v for k, v in s.items() if k not in ("history", "sample")} for s in statuses]
            report_path.write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    chief = statuses[0]
    return TrainResult(
        Path(config.output_dir),
        config.strategy.value,
        chief["num_replicas"],
        chief["eval_accuracy"],
        config.epochs,
        seconds,
        tuple(chief["history"]),
        detail=f"{len(statuses)} worker process{'es' if len(statuses) != 1 else ''}, pids {[s['pid'] for s in statuses]}",
        model=config.model,
        eval_perplexity=report.get("eval_perplexity"),
        eval_bits_per_byte=report.get("eval_bits_per_byte"),
        sample=report.get("sample"),
    )
