"""A model run on a board: the place a runtime's row runs when ``--device`` names one. The runtime decides what runs
(its ``BoardProgram``: which program of the board runner, what the load request carries, how the host reads the
bindings); the board runs it in a runner over its SSH connection, and this module moves prepared feeds out and
raw outputs back (two batches in flight), retries a runtime that crashes on batched invokes one sample per invoke,
times the model in a fresh runner, and sweeps what a dead runner left. Every fault is a ``RuntimeFailure``: the
row's, never the run's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.device import answers
from edge_tool.device.facts import measured_note
from edge_tool.device.session import RunnerSession, model_bytes, sweep
from edge_tool.device.transport import SshDevice
from edge_tool.device.url import DeviceURL
from edge_tool.errors import ModelError, RuntimeFailure
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.tflite_runner import TensorBinding, TfliteInterpreter, samples_per_invoke


@dataclass(frozen=True)
class BoardProgram:
    """What a runtime runs on a board: the runner's program for it (``name``: the ``runtime`` of its requests, ""
    for LiteRT, the runner's default), whether the hello says the board has it (``missing``: None, or the fix),
    what its ``ready`` answer holds, and the record fields of a row it ran (``facts``: the hello's runtime fields
    as that runtime's)."""

    name: str
    missing: Callable  # (hello, python) -> str | None
    ready: Callable = answers.ready  # (header) -> the checked ``ready`` answer to its ``load``
    facts: Callable = lambda hello: hello  # (hello) -> hello with runtime / runtime_version of this program
    batched: bool = True  # its runner may batch invokes (and so retry one sample per invoke after a crash)


class Board:
    """One ``--device`` of the run: its connection (opened once, shared by its rows) or why it could not be opened."""

    def __init__(self, url: DeviceURL):
        self.url, self.error, self.ssh = url, None, None
        try:
            self.ssh = SshDevice(url)
            self.ssh.open()
        except RuntimeFailure as exc:
            self.error = str(exc)

    def close(self) -> None:
        """End the connection (idempotent)."""
        if self.ssh is not None:
            self.ssh.close()


class BoardBindings(TfliteInterpreter):
    """The model's inputs/outputs as the board's runtime reports them (its ``ready``), with the host's own
    preparation (``prepare``: name matching, quantization, shape checks), ``output_for`` and ``dequantize``."""

    def __init__(self, path: Path, ready: dict):
        self.path = Path(path)
        self.facts = read_flatbuffer(self.path)
        self.inputs = [TensorBinding(n, i, np.dtype(d), tuple(s), sc, zp) for n, i, d, s, sc, zp in ready["inputs"]]
        self.outputs = [TensorBinding(n, i, np.dtype(d), tuple(s), sc, zp) for n, i, d, s, sc, zp in ready["outputs"]]
        self.batching = self._batch_policy()


class BoardRun:
    """One artefact under one runtime's ``program`` on ``board``: ``start`` (load), ``ready``, ``submit`` /
    ``collect`` of prepared feeds and raw outputs, ``latency`` in a fresh runner, ``close``."""

    depth = 2  # batches in flight
    remote = True

    def __init__(self, board: Board, model_file: Path, program: BoardProgram, load: dict):
        self.board, self.model_file, self.program, self.load = board, Path(model_file), program, load
        self.session: RunnerSession | None = None
        self.hello: dict = {}
        self.batching = ""
        self._flight: list = []  # (output indices, feeds) of the batches sent and not yet answered
        self._produced = self._single = False
        facts = read_flatbuffer(self.model_file)
        self.stateful, self.chunk = facts.stateful, samples_per_invoke(facts)

    @property
    def name(self) -> str:
        """The board's display name."""
        return self.board.url.name

    @property
    def what(self) -> str:
        """The row's work in progress lines: the artefact on the board."""
        return f"{self.model_file.name} on {self.name}"

    def start(self, single: bool = False) -> None:
        """A runner on the board with the model loaded (``single``: one sample per invoke, never batched)."""
        self.session = RunnerSession(self.board.ssh)
        self.hello = self.session.hello[0]
        why = self.program.missing(self.hello, self.board.url.python)
        if why:
            raise RuntimeFailure(why)
        request = {"op": "load", **self._runtime(), "stateful": self.stateful, "single": single, "chunk": self.chunk}
        request.update(self.load)
        self.session.send(request, blob=model_bytes(self.model_file))

    def _runtime(self) -> dict:
        return {"runtime": self.program.name} if self.program.name else {}

    def ready(self) -> dict:
        """The runner's ``ready`` answer (its bindings, how it batches)."""
        ready = self.session.receive(self.program.ready, activity=f"loading {self.what} (ready)")
        self.batching = ready["batching"]
        return ready

    def submit(self, feeds: dict[int, np.ndarray], outputs: list) -> None:
        """Send one batch of prepared feeds (by tensor index); ``outputs``: the output bindings wanted, in order."""
        self._flight.append((outputs, {f"t{i}": x for i, x in feeds.items()}))
        try:
            self.session.send(_predict(outputs), self._flight[-1][1])
        except RuntimeFailure as exc:
            if not self.retry_single(exc):
                raise

    def collect(self) -> list[np.ndarray]:
        """The raw outputs of the oldest batch in flight (RuntimeFailure when the runner failed on it)."""
        try:
            return self._collect()
        except RuntimeFailure as exc:
            if not self.retry_single(exc):
                raise
            return self._collect()

    def _collect(self) -> list[np.ndarray]:
        outputs, feeds = self._flight[0]
        n = len(next(iter(feeds.values())))
        header, arrays = self.session.receive(
            answers.predicted, answers.outputs_check(outputs, n), activity=f"accuracy pass of {self.what}"
        )
        self._flight.pop(0)
        self._produced = True
        self.batching = header.get("batching", self.batching)
        return [arrays[f"y{k}"] for k in range(len(outputs))]

    def retry_single(self, exc: RuntimeFailure) -> bool:
        """The runner died on its first batched invokes (a runtime that crashes at batch > 1): once, a new runner
        one sample per invoke, the batches in flight sent again. False when that is not the case or fails too."""
        died = self.session is not None and self.session.died
        if self._produced or self._single or not self.program.batched or not died or self.batching != "batched":
            return False
        self._single = True
        sweep(self.board.ssh, self.session)
        try:
            self.start(single=True)
            self.ready()
            for outputs, feeds in self._flight:
                self.session.send(_predict(outputs), feeds)
        except RuntimeFailure as exc2:
            raise RuntimeFailure(f"{exc}; again one sample per invoke: {exc2}") from None
        return True

    def fail(self) -> None:
        """The row failed: end the runner at once and sweep what it left."""
        self._flight.clear()
        if self.session is not None:
            self.session.close(abort=True)
            sweep(self.board.ssh, self.session)

    def end_pass(self) -> None:
        """End the accuracy runner (it removes its temp dir on the board)."""
        if self.session is not None:
            self.session.close()

    def close(self, abort: bool = False) -> None:
        """End the runner (idempotent; at once when ``abort``)."""
        if self.session is not None:
            self.session.close(abort)

    def latency(self, first: dict[int, np.ndarray], outputs: list[int], timing: dict) -> dict:
        """The checked ``latency`` answer of a fresh runner timing ``first`` (``timing``: threads, warmup, runs,
        time_budget_s); RuntimeFailure when it fails."""
        self.session = session = RunnerSession(self.board.ssh)
        session.send({"op": "load", "mode": "latency"}, blob=model_bytes(self.model_file))
        request = {"op": "latency", **timing, **self._runtime(), "stateful": self.stateful, "outputs": outputs}
        session.send({**request, **self.load}, {f"t{i}": x for i, x in first.items()})
        answer = session.receive(answers.latency, activity=f"latency run of {self.what}")
        session.close()
        return answer

    def sweep_after_failure(self) -> None:
        """After a failed latency run: end its runner at once and sweep its temp dir."""
        self.close(abort=True)
        if self.session is not None:
            sweep(self.board.ssh, self.session)

    def note(self) -> str:
        """Where the row's latency was measured (emulated or not)."""
        return measured_note(self.hello)

    def record_facts(self) -> dict:
        """The hello as the row's device record reads it (this program's runtime and version)."""
        return self.program.facts(self.hello)


def _predict(outputs: list) -> dict:
    """The ``predict`` request for these output bindings (answered as y0, y1, ... in this order)."""
    return {"op": "predict", "outputs": [b.index for b in outputs]}


def start_or_fail(run: BoardRun) -> str | None:
    """Start ``run``; the row's failure when it cannot (the board unreachable, no runtime, the model refused), or
    None."""
    if run.board.error:
        return run.board.error
    try:
        run.start()
    except (RuntimeFailure, ModelError) as exc:
        run.fail()
        return f"does not run on {run.name}: {exc}"
    return None
