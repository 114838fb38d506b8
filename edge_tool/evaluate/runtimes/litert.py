"""The ``litert`` runtime: a .tflite artefact under the LiteRT interpreter, the default for .tflite files.

Its accuracy pass runs in a worker process of its own (``tflite_worker``), its latency loop in a fresh process
afterwards (``latency_worker``), so cold start and peak RSS are the model's alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.device.board import Board, BoardBindings, BoardRun, start_or_fail
from edge_tool.device.programs import LITERT
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.latency import LatencyProcess, measure_tflite
from edge_tool.evaluate.prepared import PreparedRunner
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runners import FileWorkerRunner
from edge_tool.evaluate.runtimes.registry import RUNTIMES, RuntimeSpec
from edge_tool.litert.isolated import WorkerProcess
from edge_tool.models.readers import Artifact, ArtifactFormat


class TfliteRunner(FileWorkerRunner):
    """A .tflite artefact: accuracy pass in its own LiteRT worker, latency in a fresh process afterwards.

    The worker may hold two batches (``depth``): it answers in order, each output in a file of its own parity.
    """

    engine = "LiteRT"

    def __init__(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int = 1):
        self._start(art, config, scratch, slot)
        self.runtime = "ai_edge_litert"
        self.output_indices: list[int] = []
        self.proc = WorkerProcess(
            module_command("edge_tool.evaluate.tflite_worker", art.model_file, threads, scratch / "litert.lock"),
            "LiteRT",
            scratch,
        )
        self.latency_proc = LatencyProcess.take() if config.timed and config.latency_in_subprocess else None

    def _answered(self, doc: dict) -> None:
        """The first answer names the file with the first sample's prepared feeds (what the latency loop feeds)."""
        if "first_feeds" in doc:
            with np.load(doc["first_feeds"]) as npz:
                self.first_feeds = {int(k[1:]): npz[k] for k in npz.files}
            self.output_indices = doc["output_indices"]

    def close(self, abort: bool = False) -> None:
        """Release the worker and the latency process (idempotent; at once when ``abort``)."""
        self.proc.close(abort)
        if self.latency_proc is not None:
            self.latency_proc.close()

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency (fresh process unless configured otherwise) and the artefact's row."""
        lat, rss = None, None
        if not self.failed and config.timed:
            args = (
                self.art.model_file,
                self.first_feeds,
                self.output_indices,
                config.threads,
                config.warmup,
                config.effective_runs,
                config.time_budget_s,
            )
            try:
                if self.latency_proc is not None:
                    lat, rss = self.latency_proc.measure(*args)
                else:
                    lat = measure_tflite(*args)
            except RuntimeFailure as exc:
                self.failed = f"does not run in LiteRT: {exc}"
            except (RuntimeError, ValueError) as exc:  # in-process timing (latency_in_subprocess=False)
                self.failed = f"does not run in LiteRT: latency run: {str(exc).strip()[:400]}"
        self.close()
        return self._row(
            label,
            reference,
            "tflite",
            fields,
            latency=lat,
            peak_rss_mb=rss,
            threads=config.threads,
            runtime=self.runtime,
            batching="" if self.failed else self.batching,
        )


class BoardTfliteRunner(PreparedRunner):
    """A .tflite artefact under the LiteRT of a ``--device`` board (its ai-edge-litert, tflite-runtime or tf.lite):
    feeds prepared and outputs dequantized here with the bindings the board reports, two batches in flight, the
    latency loop (this host's own ``litert.timing``) in a fresh runner there."""

    def __init__(self, art: Artifact, config: EvalConfig, board: Board, fleet=None):
        self._begin(art, config, BoardRun(board, art.model_file, LITERT, {"threads": config.threads}), fleet)
        self.failed = start_or_fail(self.executor)

    def _bindings(self, ready: dict) -> BoardBindings:
        return BoardBindings(self.art.model_file, ready)

    def _first_batch(self) -> int:
        return self.bindings.fixed_batch

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency on the board (fresh runner) and the row, with the board's record."""
        lat, rss = self.latency(config)
        hello = self.executor.hello
        return self._row(
            label,
            reference,
            "tflite",
            fields,
            latency=lat,
            peak_rss_mb=rss,
            threads=config.threads,
            runtime=" ".join(filter(None, (hello.get("runtime"), hello.get("runtime_version")))) or "none",
            latency_note=self.executor.note(),
            batching="" if self.failed else self.batching,
            **self.placed(),
        )


SPEC = RUNTIMES.register(
    RuntimeSpec(
        name="litert",
        formats=(ArtifactFormat.TFLITE.value,),
        open=TfliteRunner,
        on_board=BoardTfliteRunner,
        default=True,
        shares_cores=True,
        summary="LiteRT interpreter (ai-edge-litert), XNNPACK on the CPU",
        claims=lambda r: r.format == "tflite" and r.arena is None,
    )
)
