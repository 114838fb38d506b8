"""What every runner of eval's pass shares: a worker process fed batch by batch (``submit`` then ``collect``, so
every artefact and the reference work on a batch at the same time), then its latency and its report row. The
runners themselves are the runtimes' (``evaluate/runtimes/<name>.py``).

A runner whose process dies or whose runtime refuses the model stops there: it is marked ``failed`` with the
reason, the other artefacts go on, and its row says "does not run in …".
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np

from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.models.readers import Artifact

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


class FileWorkerRunner(_Runner):
    """A runner whose worker process reads each batch from the shared batch files and writes the outputs to an .npz
    of its own parity (two batches in flight); the LiteRT and ONNX Runtime rows. Subclasses start ``self.proc``
    and say what else a worker's answer carries (``_answered``)."""

    reads_files = True
    depth = 2
    engine = "the runtime"  # in failure reasons: "does not run in <engine>"

    def _start(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int) -> None:
        self.art, self.config = art, config
        self.out_files = [scratch / f"out{slot}_{parity}.npz" for parity in range(self.depth)]
        self._in_flight: deque[tuple[Path, tuple[str, ...]]] = deque()
        self.failed: str | None = None
        self.batching = ""
        self.first_feeds: dict | None = None
        self._pending = self._sent = 0
        self._ready = False

    def _fail(self, exc: RuntimeFailure) -> None:
        self.failed = f"does not run in {self.engine}: {exc}"
        self._in_flight.clear()
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
            request = {"op": "predict", "inputs": files, "out_names": list(out_names), "ref_names": ref_names}
            self.proc.send({**request, "out": str(out)})
            self._in_flight.append((out, tuple(out_names)))
            self._sent += 1
            self._pending += 1
        except RuntimeFailure as exc:
            self._fail(exc)

    def _receive(self) -> dict[str, np.ndarray]:
        """The worker's outputs, by reference name, for the oldest batch in flight, read from the file it wrote."""
        out_file, names = self._in_flight.popleft()
        doc = self.proc.receive()
        self.batching = doc.get("batching", self.batching)
        self._answered(doc)
        with np.load(out_file) as npz:
            return {name: npz[f"o{i}"] for i, name in enumerate(names)}

    def _answered(self, doc: dict) -> None:
        """What a worker's answer carries besides the outputs (the first sample's feeds, for the latency loop)."""

    def end_pass(self) -> None:
        """Stop the pass worker (frees its memory before the latency loops)."""
        self.proc.close()


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
        if not self.failed and config.timed:
            try:
                lat = measure()
            except RuntimeFailure as exc:
                self.failed = f"{failure}: latency run: {exc}"
        self.session.close()
        return lat
