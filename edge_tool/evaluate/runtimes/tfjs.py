"""The ``tfjs`` runtime: a TFJS graph model in a Node session (wasm backend, cpu if wasm cannot run it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runners import SessionRunner
from edge_tool.evaluate.runtimes.registry import RUNTIMES, RuntimeSpec
from edge_tool.models.readers import Artifact, ArtifactFormat
from edge_tool.nodejs.tfjs_session import TfjsSession


class TfjsRunner(SessionRunner):
    """A TFJS artefact: a Node session (wasm backend, cpu if wasm cannot run it) fed batch by batch."""

    reads_files = False  # the session writes its own typed input files

    def __init__(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int = 1):
        self.art, self.config = art, config
        self.failed: str | None = None
        self.wasm_failure: str | None = None
        self.first: dict | None = None
        self._inputs: dict | None = None
        self._names: tuple = ("", [])
        self._produced = False
        self._pending = 0
        self._session_cls = TfjsSession
        self.session = TfjsSession(art.model_file, backend="wasm")
        self.batching = "batched"

    def submit(self, files: dict, inputs: dict, out_names: tuple[str, ...], ref_names: list[str]) -> None:
        """Send one batch to Node."""
        if self.failed:
            return
        if self.first is None:
            self.first = {k: v[:1].copy() for k, v in inputs.items()}
        self._inputs, self._names = inputs, (tuple(out_names), ref_names)
        try:
            self.session.submit(inputs)
            self._pending = 1
        except RuntimeFailure as exc:
            self._pending = int(self._retry_on_cpu(exc))

    def _retry_on_cpu(self, exc: RuntimeFailure) -> bool:
        """wasm failed before any output: restart the session on the cpu backend and resend; False if it fails."""
        if self._produced or self.session.backend != "wasm":
            self._fail(exc)
            return False
        self.session.close()
        self.wasm_failure = str(exc)
        try:
            self.session = self._session_cls(self.art.model_file, backend="cpu")
            self.session.submit(self._inputs)
        except RuntimeFailure as exc2:
            self._fail(exc2)
            return False
        return True

    def _fail(self, exc: RuntimeFailure) -> None:
        self.failed = f"{self._failure()}: {exc}"
        self.session.close()

    def _receive(self) -> dict[str, np.ndarray]:
        """The model's outputs matching the reference's ``out_names`` (by name, else by position) for the batch."""
        return self._pick(self.session.collect())

    def _receive_failed(self, exc: RuntimeFailure) -> dict | None:
        """wasm failed before any output: the batch again on the cpu backend; None if that fails too."""
        return self.collect_after_retry() if self._retry_on_cpu(exc) else None

    def collect_after_retry(self) -> dict | None:
        """Collect the batch resent on the cpu backend."""
        try:
            return self._pick(self.session.collect())
        except RuntimeFailure as exc:
            self._fail(exc)
            return None

    def _pick(self, out: dict) -> dict[str, np.ndarray]:
        self._produced = True
        out_names, ref_names = self._names
        return {n: out[n if n in out else sorted(out)[ref_names.index(n)]] for n in out_names}

    def _failure(self) -> str:
        return f"does not run in tfjs ({self.session.backend} backend, Node)"

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency in the same Node session (batch 1, first sample) and the artefact's row."""

        def measure():
            times = self.session.latency(self.first, config.warmup, config.effective_runs, config.time_budget_s)
            return summarize(np.asarray(times) * 1e6, None) if times else None

        lat = self._session_latency(config, measure, self._failure())
        backend = self.session.backend
        note = f"tfjs {backend} backend in Node (single-threaded), not a browser figure"
        if backend == "cpu" and self.wasm_failure:
            note += f"; wasm backend failed ({self.wasm_failure})"
        return self._row(
            label,
            reference,
            "tfjs",
            fields,
            latency=lat,
            peak_rss_mb=None,
            threads=1,
            runtime=self.session.version,
            latency_note=note,
            batching="" if self.failed else self.batching,
        )


SPEC = RUNTIMES.register(
    RuntimeSpec(
        name="tfjs",
        formats=(ArtifactFormat.TFJS.value,),
        open=TfjsRunner,
        default=True,
        row_notes=True,
        summary="@tensorflow/tfjs in Node.js (wasm backend, cpu where wasm cannot run the model)",
        claims=lambda r: r.format == "tfjs",
    )
)
