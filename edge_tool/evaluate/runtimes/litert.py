"""The ``litert`` runtime: a .tflite artefact under the LiteRT interpreter, the default for .tflite files.

Its accuracy pass runs in a worker process of its own (``tflite_worker``), its latency loop in a fresh process
afterwards (``latency_worker``), so cold start and peak RSS are the model's alone.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.artifacts import Artifact
from edge_tool.evaluate.config import ArtifactFormat, EvalConfig
from edge_tool.evaluate.latency import LatencyProcess, measure_tflite
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runners import _Runner
from edge_tool.evaluate.runtimes.registry import RuntimeSpec, register
from edge_tool.litert.isolated import WorkerProcess


class TfliteRunner(_Runner):
    """A .tflite artefact: accuracy pass in its own LiteRT worker, latency in a fresh process afterwards.

    The worker may hold two batches (``depth``): it answers in order, each output in a file of its own parity.
    """

    reads_files = True
    depth = 2

    def __init__(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int = 1):
        self.art, self.config = art, config
        self.out_files = [scratch / f"out{slot}_{parity}.npz" for parity in range(self.depth)]
        self._in_flight: deque[Path] = deque()
        self._names: deque[tuple[str, ...]] = deque()
        self._sent = 0
        self.failed: str | None = None
        self.runtime, self.batching = "ai_edge_litert", ""
        self.first_feeds: dict | None = None
        self.output_indices: list[int] = []
        self._pending = 0
        self._ready = False
        self.proc = WorkerProcess(
            module_command("edge_tool.evaluate.tflite_worker", art.model_file, threads, scratch / "litert.lock"),
            "LiteRT",
            scratch,
        )
        timed = config.effective_runs or config.time_budget_s
        self.latency_proc = LatencyProcess() if timed and config.latency_in_subprocess else None

    def _fail(self, exc: RuntimeFailure) -> None:
        self.failed = f"does not run in LiteRT: {exc}"
        self._in_flight.clear()
        self._names.clear()
        self.proc.close()

    def submit(self, files: dict, inputs: dict, out_names: tuple[str, ...], ref_names: list[str]) -> None:
        """Send one batch to the worker (it works while the reference and the other artefacts do); it returns the
        outputs matching the reference's ``out_names``."""
        if self.failed:
            return
        try:
            if not self._ready:
                ready = self.proc.receive()
                self._ready, self.runtime, self.batching = True, ready["runtime"], ready["batching"]
            out = self.out_files[self._sent % self.depth]
            self.proc.send(
                {
                    "op": "predict",
                    "inputs": files,
                    "out_names": list(out_names),
                    "ref_names": ref_names,
                    "out": str(out),
                }
            )
            self._names.append(tuple(out_names))
            self._in_flight.append(out)
            self._sent += 1
            self._pending += 1
        except RuntimeFailure as exc:
            self._fail(exc)

    def _receive(self) -> dict[str, np.ndarray]:
        """The worker's (dequantized) outputs, by reference name, for the oldest batch in flight, read from the file
        it wrote."""
        out_file, names = self._in_flight.popleft(), self._names.popleft()
        doc = self.proc.receive()
        self.batching = doc.get("batching", self.batching)
        if "first_feeds" in doc:
            with np.load(doc["first_feeds"]) as npz:
                self.first_feeds = {int(k[1:]): npz[k] for k in npz.files}
            self.output_indices = doc["output_indices"]
        with np.load(out_file) as npz:
            return {name: npz[f"o{i}"] for i, name in enumerate(names)}

    def end_pass(self) -> None:
        """Stop the worker (frees its memory before the latency loops)."""
        self.proc.close()

    def close(self, abort: bool = False) -> None:
        """Release the worker and the latency process (idempotent; at once when ``abort``)."""
        self.proc.close(abort)
        if self.latency_proc is not None:
            self.latency_proc.close()

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency (fresh process unless configured otherwise) and the artefact's row."""
        lat, rss = None, None
        if not self.failed and (config.effective_runs or config.time_budget_s):
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


SPEC = register(
    RuntimeSpec(
        name="litert",
        formats=(ArtifactFormat.TFLITE.value,),
        open=TfliteRunner,
        default=True,
        shares_cores=True,
        summary="LiteRT interpreter (ai-edge-litert), XNNPACK on the CPU",
        claims=lambda r: r.format == "tflite" and r.arena is None and r.device is None,
    )
)
