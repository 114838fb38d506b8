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

from edge_tool.device.board import Board, BoardRun


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
    """The board rows of a run: their latency loops, started together per board on the first request."""

    def __init__(self):
        self.jobs: list[tuple[BoardRun, Callable]] = []  # (run, its latency measurement) in row order
        self._lock = threading.Lock()
        self._started = False
        self._done: dict[int, threading.Event] = {}
        self._answers: dict[int, tuple] = {}

    def add(self, run: BoardRun, measure: Callable[[], object]) -> None:
        """A row's board run and what measures its latency there (``measure()``: its figures, or None)."""
        self.jobs.append((run, measure))

    def latency(self, run: BoardRun):
        """What ``run``'s ``measure`` returned, measured on its board with the others; its RuntimeFailure."""
        with self._lock:
            if not self._started:
                self._started = True
                self._start()
        self._done[id(run)].wait()
        ok, value = self._answers[id(run)]
        if not ok:
            raise value
        return value

    def _start(self) -> None:
        by_cpu: dict[tuple, list] = {}
        for run, measure in self.jobs:
            self._done[id(run)] = threading.Event()
            by_cpu.setdefault(_cpu(run), []).append((run, measure))
        for jobs in by_cpu.values():
            threading.Thread(target=self._measure, args=(jobs,), daemon=True).start()

    def _measure(self, jobs: list) -> None:
        """One board's rows, one after the other (in the board's own thread)."""
        for run, measure in jobs:
            try:
                self._answers[id(run)] = (True, measure())
            except BaseException as exc:  # RuntimeFailure: the row's; anything else is raised in the main thread
                self._answers[id(run)] = (False, exc)
            self._done[id(run)].set()


def _cpu(run: BoardRun) -> tuple:
    """Which CPU a board row's loop runs on, as far as we can tell: all emulated boards one (their host's), else
    the board's host name (several ``?python=`` URLs of one machine share it)."""
    return ("emulated",) if run.hello.get("emulated") else ("host", run.board.url.host)


def open_boards(urls, stack: ExitStack) -> list[Board]:
    """Every ``--device``'s connection, opened in parallel (a board that cannot be reached says why in its rows),
    closed by ``stack``."""
    boards = in_parallel(Board, list(urls))
    for board in boards:
        stack.callback(board.close)
    return boards
