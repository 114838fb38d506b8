"""A runner whose feeds are prepared here and whose raw outputs come back to be dequantized here, wherever the model
runs: the runtime decides what runs (its bindings, the first sample timed, its row), the place decides where — an
executor that is a local process (TFLM's worker) or a runner on a ``--device`` board (``device.board.BoardRun``).

An executor has ``depth`` (batches in flight), ``remote``, ``batching``, ``ready()`` (its answer once the model is
loaded), ``submit(feeds, outputs)`` / ``collect()`` (prepared feeds by tensor index out, raw outputs back),
``latency(first, outputs, timing)`` (``times_ns``, ``cold_start_ms``, ``peak_rss_mb``), ``end_pass``, ``close``,
``fail`` and ``note()`` (where its latency was measured); a board's also has ``board`` and ``record_facts()``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from edge_tool.device.facts import device_record
from edge_tool.errors import EdgeToolError, RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.runners import _Runner


class PreparedRunner(_Runner):
    """Host-prepared feeds through ``self.executor`` (set by the runtime's ``__init__`` with ``_begin``)."""

    reads_files = False

    def _begin(self, art, config: EvalConfig, executor, fleet=None) -> None:
        self.art, self.config, self.executor, self.fleet = art, config, executor, fleet
        self.depth = executor.depth
        self.failed: str | None = None
        self.bindings = None  # a TfliteInterpreter: prepare, output_for, dequantize
        self.first: dict | None = None
        self.batching, self._pending = "", 0
        self._flight: deque = deque()  # the output bindings of each batch in flight
        if fleet is not None:
            fleet.add(executor, self.measure_latency)

    # what the runtime says
    def _bindings(self, ready: dict):
        """The bindings feeds are prepared and outputs dequantized with, once the executor is ready."""
        raise NotImplementedError

    def _first_batch(self) -> int:
        """Samples in the latency loop's feed (the file's fixed batch, or 1)."""
        return 1

    @property
    def board(self):
        """The ``--device`` board this row runs on (``device.board.Board``), None on this host."""
        return getattr(self.executor, "board", None)

    def _failure(self) -> str:
        """The start of this row's failure reason."""
        return f"does not run on {self.board.url.name}" if self.board is not None else f"does not run in {self.engine}"

    engine = "the runtime"

    # the pass
    def _fail(self, exc: Exception) -> None:
        self.failed = f"{self._failure()}: {exc}"
        self._flight.clear()
        self.executor.fail()

    def submit(self, files: dict, inputs: dict, out_names: tuple[str, ...], ref_names: list[str]) -> None:
        """Prepare the batch here and send it to the executor."""
        if self.failed:
            return
        try:
            if self.bindings is None:
                self.bindings = self._bindings(self.executor.ready())
                self.batching = self.executor.batching
            try:
                feeds = self.bindings.prepare(inputs)
            except EdgeToolError as exc:
                if not self.executor.remote:
                    raise
                raise RuntimeFailure(f"the device's bindings do not fit the data: {exc}") from None
            if self.first is None:
                self.first = first_feeds(feeds, self._first_batch())
            bindings = {n: self.bindings.output_for(n, ref_names.index(n)) for n in out_names}
            self._flight.append(bindings)
            self._pending += 1
            self.executor.submit(feeds, list(bindings.values()))
        except RuntimeFailure as exc:
            self._fail(exc)

    def _receive(self) -> dict[str, np.ndarray]:
        bindings = self._flight[0]
        raw = self.executor.collect()
        self._flight.popleft()
        self.batching = self.executor.batching
        return {n: self.bindings.dequantize(b, y) for (n, b), y in zip(bindings.items(), raw)}

    def end_pass(self) -> None:
        """The executor's end of the pass (a board's runner ends; a local session stays for the latency loop)."""
        self.executor.end_pass()

    def close(self, abort: bool = False) -> None:
        """Release the executor (idempotent; at once when ``abort``)."""
        self.executor.close(abort)

    # latency
    def wants_latency(self, config: EvalConfig) -> bool:
        """Whether this row's latency is measured (it ran the pass, and timing is on)."""
        return not self.failed and self.first is not None and config.timed

    def measure_latency(self):
        """(LatencyStats, peak RSS MB) of the executor's timed loop on the first sample; None when not wanted."""
        if not self.wants_latency(self.config):
            return None
        config = self.config
        timing = {
            "threads": config.threads,
            "warmup": config.warmup,
            "runs": config.effective_runs,
            "time_budget_s": config.time_budget_s,
        }
        answer = self.executor.latency(self.first, [b.index for b in self.bindings.outputs], timing)
        self._timed(answer)
        return summarize(answer["times_ns"], answer.get("cold_start_ms")), answer.get("peak_rss_mb")

    def _timed(self, answer: dict) -> None:
        """What else the latency answer carries (TFLM: the arena the board ran with)."""

    def latency(self, config: EvalConfig):
        """(LatencyStats, peak RSS MB) or (None, None); a failure becomes the row's, the executor closed."""
        lat = rss = None
        try:
            got = self.fleet.latency(self.executor) if self.fleet else self.measure_latency()
            lat, rss = got or (None, None)
        except RuntimeFailure as exc:
            self.failed = f"{self._failure()}: latency run: {exc}"
            self.executor.fail()
        self.close(abort=bool(self.failed))
        return lat, rss

    def placed(self) -> dict:
        """The row's fields of where it ran: its ``device`` record on a board, nothing on this host."""
        return {"device": device_record(self.board.url, self.executor.record_facts())} if self.board else {}


def first_feeds(feeds: dict, b: int) -> dict:
    """What the latency loop feeds: the first ``b`` samples (padded with the last when the batch is shorter)."""
    first = {}
    for idx, x in feeds.items():
        chunk = x[:b]
        if len(chunk) < b:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], b - len(chunk), axis=0)])
        first[idx] = chunk
    return first
