"""One runner per artefact during eval's pass: a worker process fed batch by batch (``submit`` then ``collect``, so
every artefact and the reference work on a batch at the same time), then its latency and its report row.

A runner whose process dies or whose runtime refuses the model stops there: it is marked ``failed`` with the
reason, the other artefacts go on, and its row says "does not run in …".
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.artifacts import Artifact
from edge_tool.evaluate.config import EvalConfig
from edge_tool.litert.isolated import WorkerProcess
from edge_tool.evaluate.latency import LatencyProcess, measure_tflite, summarize
from edge_tool.evaluate.report import ArtifactResult, ReferenceResult

NONE_FIELDS = {"top1_agreement": None, "max_abs_error": None, "mean_abs_error": None, "cosine": None,
               "accuracy": None, "top_k_accuracy": None, "accuracy_drop": None, "metrics": None, "drift": None,
               "metric_drop": None}


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
        return ArtifactResult(artifact=label, format=fmt, quant=art.quant, size_bytes=art.size_bytes,
                              size_ratio=art.size_bytes / reference.size_bytes, failed=self.failed,
                              **measured, **fields)


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
        self.proc = WorkerProcess(module_command("edge_tool.evaluate.tflite_worker", art.model_file, threads,
                                                  scratch / "litert.lock"), "LiteRT", scratch)
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
            self.proc.send({"op": "predict", "inputs": files, "out_names": list(out_names), "ref_names": ref_names,
                            "out": str(out)})
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
            args = (self.art.model_file, self.first_feeds, self.output_indices, config.threads, config.warmup,
                    config.effective_runs, config.time_budget_s)
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
        return self._row(label, reference, "tflite", fields, latency=lat, peak_rss_mb=rss, threads=config.threads,
                         runtime=self.runtime, batching="" if self.failed else self.batching)


class TfjsRunner(SessionRunner):
    """A TFJS artefact: a Node session (wasm backend, cpu if wasm cannot run it) fed batch by batch."""

    reads_files = False  # the session writes its own typed input files

    def __init__(self, art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int = 1):
        from edge_tool.evaluate.tfjs_runner import TfjsSession  # noqa: PLC0415

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
        return self._row(label, reference, "tfjs", fields, latency=lat, peak_rss_mb=None, threads=1,
                         runtime=self.session.version, latency_note=note,
                         batching="" if self.failed else self.batching)
