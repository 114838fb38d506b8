"""What every runner of eval's pass shares: a worker process fed batch by batch (``submit`` then ``collect``, so
every artefact and the reference work on a batch at the same time), then its latency and its report row. The
runners themselves are the runtimes' (``evaluate/runtimes/<name>.py``).

A runner whose process dies or whose runtime refuses the model stops there: it is marked ``failed`` with the
reason, the other artefacts go on, and its row says "does not run in …".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.artifacts import Artifact
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult

NONE_FIELDS = {
    "top1_agreement": None,
    "max_abs_error": None,
    "mean_abs_error": None,
    "cosine": None,
    "accuracy": None,
    "top_k_accuracy": None,
    "accuracy_drop": None,
    "metrics": None,
    "drift": None,
    "metric_drop": None,
}


class BatchFiles:
    """One batch of inputs written once to the scratch dir (``in<i>_<parity>.npy``), read by every LiteRT worker;
    two parities, so a batch can be written while workers still read the one before."""

    def __init__(self, scratch: Path):
        self.scratch = scratch

    def write(self, inputs: dict, parity: int = 0) -> dict[str, str]:
        """Save each input; return {input name: file}."""
        files = {}
        for i, (name, x) in enumerate(inputs.items()):
            f = self.scratch / f"in{i}_{parity}.npy"
            np.save(f, np.ascontiguousarray(x))
            files[name] = str(f)
        return files


class _Runner:
    """What every runner shares: the failure reason, the batches in flight, the report row.

    ``depth`` is how many batches may be submitted before the oldest is collected (``_pending`` counts them).
    """

    art: Artifact
    failed: str | None = None
    depth = 1
    _pending = 0

    def collect(self) -> dict[str, np.ndarray] | None:
        """The artefact's outputs (by reference output name) for the oldest batch not yet collected
        (``_receive``); None once it has failed."""
        if self.failed or not self._pending:
            return None
        self._pending -= 1
        try:
            return self._receive()
        except RuntimeFailure as exc:
            return self._receive_failed(exc)

    def _receive_failed(self, exc: RuntimeFailure) -> dict | None:
        """The runtime failed on the batch: the runner is failed from now on."""
        self._fail(exc)
        return None

    def reject(self, reason: str) -> None:
        """Its outputs are unusable (e.g. NaN where the reference's are finite): failed from now on, with ``reason``."""
        self.failed = reason
        self._pending = 0
        self.close(abort=True)

    def _row(self, label: str, reference: ReferenceResult, fmt: str, fields: dict, **measured) -> ArtifactResult:
        """The artefact's report row: its size against the reference's, ``measured`` and the accuracy ``fields``."""
        art = self.art
        return ArtifactResult(
            artifact=label,
            format=fmt,
            quant=art.quant,
            size_bytes=art.size_bytes,
            size_ratio=art.size_bytes / reference.size_bytes,
            failed=self.failed,
            **measured,
            **fields,
        )


class SessionRunner(_Runner):
    """A runner whose worker session outlives the pass: the latency loop runs in it, then it is closed."""

    session = None

    def end_pass(self) -> None:
        """Keep the session: the latency loop runs in it."""

    def close(self, abort: bool = False) -> None:
        """Release the session (idempotent; at once when ``abort``)."""
        self.session.close(abort)

    def _session_latency(self, config: EvalConfig, measure, failure: str):
        """``measure()`` unless the runner failed or timing is off (a failure there says ``failure``); closes."""
        lat = None
        if not self.failed and (config.effective_runs or config.time_budget_s):
            try:
                lat = measure()
            except RuntimeFailure as exc:
                self.failed = f"{failure}: latency run: {exc}"
        self.session.close()
        return lat
