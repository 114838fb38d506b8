"""Several devices in one run (``--device`` repeated): the boards work in parallel, each over its own SSH
connection, and each row's faults stay that row's.

- Opening: every device's connection, then every (artefact, device) runner, is started from a thread of its own, so
  N boards cost the slowest board's start-up, not the sum (a Python start under qemu is seconds).
- The accuracy pass already runs every runner at once (each batch is sent to all of them before any is collected).
- Latency: when the first device row asks for its figures (after the host rows measured theirs on a quiet
  machine), every device starts measuring its rows, one after the other on each device (two loops on one board
  would disturb each other), the devices at the same time — except devices that share a CPU: several URLs of one
  host (``?python=`` variants), and emulated boards (qemu runs them on their host's CPU, and two emulated boards
  are most likely on the same host) take turns, or each would time the other's load.

A board that drops out fails its own rows (its runners see the lost connection); the other boards' threads are
not waiting on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack

from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.device.runner import DeviceHandle, DeviceRunner
from edge_tool.models.formats import Artifact, ArtifactFormat


def in_parallel(fn: Callable, items: list) -> list:
    """``[fn(item) for item in items]``, each call in a thread of its own (daemon threads: a stop signal in the
    main thread does not wait for them); an exception of a call is raised here."""
    results: list = [None] * len(items)
    errors: list = [None] * len(items)

    def run(k: int, item) -> None:
        try:
            results[k] = fn(item)
        except BaseException as exc:
            errors[k] = exc

    threads = [threading.Thread(target=run, args=(k, it), daemon=True) for k, it in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class Fleet:
    """The device rows of a run: their latency loops, started together per device on the first request."""

    def __init__(self, config: EvalConfig):
        self.config = config
        self.runners: list = []
        self._lock = threading.Lock()
        self._started = False
        self._done: dict[int, threading.Event] = {}
        self._answers: dict[int, tuple] = {}

    def latency(self, runner) -> tuple:
        """``runner``'s (LatencyStats, peak RSS MB), measured on its device; RuntimeFailure from its loop."""
        with self._lock:
            if not self._started:
                self._started = True
                self._start()
        self._done[id(runner)].wait()
        ok, value = self._answers[id(runner)]
        if not ok:
            raise value
        return value

    def _start(self) -> None:
        by_cpu: dict[tuple, list] = {}
        for r in self.runners:
            self._done[id(r)] = threading.Event()
            by_cpu.setdefault(_cpu(r), []).append(r)
        for rows in by_cpu.values():
            threading.Thread(target=self._measure, args=(rows,), daemon=True).start()

    def _measure(self, rows: list) -> None:
        """One device's rows, one after the other (in the device's own thread)."""
        for r in rows:
            try:
                self._answers[id(r)] = (True, r.measure_latency(self.config) if r.wants_latency(self.config) else None)
            except BaseException as exc:  # RuntimeFailure: the row's; anything else is raised in the main thread
                self._answers[id(r)] = (False, exc)
            self._done[id(r)].set()


def _cpu(runner) -> tuple:
    """Which CPU a device row's loop runs on, as far as we can tell: all emulated boards one (their host's), else
    the device's host name (several ``?python=`` URLs of one machine share it)."""
    return ("emulated",) if runner.hello.get("emulated") else ("host", runner.device.url.host)


def open_device_runners(arts: list[Artifact], labels: list[str], config: EvalConfig, stack: ExitStack) -> list:
    """(runner, row label) for every .tflite artefact on every ``--device``, opened in parallel; connections and
    runners closed by ``stack``."""
    handles = in_parallel(DeviceHandle, list(config.device_urls))
    for handle in handles:
        stack.callback(handle.close)
    fleet = Fleet(config)
    pairs = [
        (art, label, handle)
        for handle in handles
        for art, label in zip(arts, labels)
        if art.format is ArtifactFormat.TFLITE
    ]
    runners = in_parallel(lambda p: DeviceRunner(p[0], config, p[2], fleet), pairs)
    rows = []
    for runner, (_, label, handle) in zip(runners, pairs):
        stack.push(lambda exc_type, *_, r=runner: r.close(abort=exc_type is not None))
        fleet.runners.append(runner)
        rows.append((runner, f"{label} @ {handle.url.name}"))
    return rows
