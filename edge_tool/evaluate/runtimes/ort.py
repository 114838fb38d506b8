"""The ``onnxruntime`` runtime: an .onnx artefact in ONNX Runtime on the CPU execution provider (the optional
``onnx`` extra). Like a LiteRT row: its accuracy pass in a worker process of its own (``ort_worker``), fed the same
prepared batches, and its latency loop in a fresh process afterwards (cold start, percentiles, peak RSS).
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.core.childproc import module_command
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, ReferenceResult
from edge_tool.evaluate.runners import FileWorkerRunner
from edge_tool.evaluate.runtimes.registry import RUNTIMES, RuntimeSpec
from edge_tool.litert.isolated import WorkerProcess
from edge_tool.models.readers import Artifact, ArtifactFormat
from edge_tool.models.readers.onnx import EXTRA_HINT, require_onnx

WORKER = "edge_tool.evaluate.runtimes.ort_worker"
LATENCY_NOTE = "latency of session.run on batch 1, each .onnx in a fresh process"


class OrtRunner(FileWorkerRunner):
    """An .onnx artefact: accuracy pass in its ONNX Runtime worker (two batches in flight), latency in a fresh
    worker started ahead (its import of onnxruntime overlaps the pass)."""

    engine = "ONNX Runtime"

    def __init__(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int = 1):
        require_onnx(f"Evaluating {art.model_file}")
        self._start(art, config, scratch, slot)
        self.runtime = "onnxruntime"
        self.proc = self._worker(threads, "pass", scratch)
        self.latency_proc = self._worker(config.threads, "latency", scratch) if config.timed else None

    def _worker(self, threads: int, mode: str, scratch: Path) -> WorkerProcess:
        argv = module_command(
            WORKER, self.art.model_file, threads, scratch / "litert.lock" if mode == "pass" else "", mode
        )
        return WorkerProcess(argv, "ONNX Runtime", scratch)

    def _answered(self, doc: dict) -> None:
        """The first sample's feeds come inline (the latency worker's input)."""
        self.first_feeds = doc.get("first_feeds", self.first_feeds)

    def close(self, abort: bool = False) -> None:
        """Release both workers (idempotent; at once when ``abort``)."""
        self.proc.close(abort)
        if self.latency_proc is not None:
            self.latency_proc.close(abort)

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency in the fresh worker and the artefact's row."""
        lat, rss = None, None
        if not self.failed and self.latency_proc is not None and self.first_feeds:
            try:
                doc = self.latency_proc.ask(
                    {
                        "op": "latency",
                        "feeds": self.first_feeds,
                        "warmup": config.warmup,
                        "runs": config.effective_runs,
                        "time_budget_s": config.time_budget_s,
                    }
                )
                lat, rss = LatencyStats.from_dict(doc["latency"]), float(doc["peak_rss_mb"])
            except RuntimeFailure as exc:
                self.failed = f"does not run in ONNX Runtime: latency run: {exc}"
        self.close()
        return self._row(
            label,
            reference,
            ArtifactFormat.ONNX.value,
            fields,
            latency=lat,
            peak_rss_mb=rss,
            threads=config.threads,
            runtime=self.runtime,
            latency_note=LATENCY_NOTE,
            batching="" if self.failed else self.batching,
        )


SPEC = RUNTIMES.register(
    RuntimeSpec(
        name="onnxruntime",
        formats=(ArtifactFormat.ONNX.value,),
        open=OrtRunner,
        default=True,
        shares_cores=True,
        row_notes=True,
        extra=EXTRA_HINT,
        summary="ONNX Runtime on the CPU execution provider (onnxruntime, the optional `onnx` extra)",
        claims=lambda r: r.format == "onnx",
    )
)
