"""``eval --device``: each .tflite artefact also runs on each device, as a row of its own.

The accuracy pass sends each batch, prepared on the host exactly as for a host row (quantized with the model's own
scale), to a runner on the device and dequantizes the raw output it returns, so the same drift metrics apply. The
latency loop runs afterwards in a fresh runner on the device (cold start, the host's own timed loop, peak RSS).
Any fault (unreachable device, lost connection, no runtime, a model the runtime refuses, out of memory) becomes
that row's ``failed`` reason; the other rows go on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import EdgeToolError, ModelError, RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.device import answers
from edge_tool.evaluate.device.facts import device_record, measured_note, missing_runtime, missing_tflm, runtime_usable
from edge_tool.evaluate.device.session import RunnerSession, model_bytes, sweep
from edge_tool.evaluate.device.tflm_plan import TflmPlan
from edge_tool.evaluate.device.transport import SshDevice
from edge_tool.evaluate.device.url import DeviceURL
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runners import _Runner
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.tflite_runner import TensorBinding, TfliteInterpreter
from edge_tool.models.formats import Artifact


class DeviceBindings(TfliteInterpreter):
    """The model's inputs/outputs as the device's runtime reports them, with the host's own preparation
    (``prepare``: name matching, quantization, shape checks), ``output_for`` and ``dequantize``."""

    def __init__(self, path: Path, ready: dict):
        self.path = Path(path)
        self.facts = read_flatbuffer(self.path)
        self.inputs = [TensorBinding(n, i, np.dtype(d), tuple(s), sc, zp) for n, i, d, s, sc, zp in ready["inputs"]]
        self.outputs = [TensorBinding(n, i, np.dtype(d), tuple(s), sc, zp) for n, i, d, s, sc, zp in ready["outputs"]]
        self.batching = self._batch_policy()


class DeviceHandle:
    """One device of the run: its connection (opened once, shared by its rows) or why it could not be opened."""

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


class DeviceRunner(_Runner):
    """A .tflite artefact on a device (see the module docstring); two batches may be in flight."""

    reads_files = False
    depth = 2

    def __init__(self, art: Artifact, config: EvalConfig, device: DeviceHandle, fleet=None):
        self.art, self.config, self.device, self.fleet = art, config, device, fleet  # fleet: device.fleet.Fleet
        self.failed: str | None = device.error
        self.hello: dict = {}
        self.plan: DeviceBindings | None = None
        self.first: dict | None = None
        self.batching, self._pending = "", 0
        self._flight: list = []  # (output binding, feeds) of the batches sent and not yet answered
        self._produced = self._single = False
        self.session: RunnerSession | None = None
        self.tflm = TflmPlan(art.model_file) if config.runtime == "tflm" and not self.failed else None
        if not self.failed:
            try:
                self._open()
            except (RuntimeFailure, ModelError) as exc:
                self._fail(exc)

    def _open(self, single: bool = False) -> None:
        """A runner on the device with the model loaded (``single``: one sample per invoke, never batched)."""
        self.session = RunnerSession(self.device.ssh)
        self.hello = self.session.hello[0]
        self.stateful = read_flatbuffer(self.art.model_file).stateful
        if self.tflm is not None:
            if self.hello.get("tflm") is None:
                raise RuntimeFailure(missing_tflm(self.hello, self.device.url.python))
            self.session.send(self.tflm.load(), blob=model_bytes(self.art.model_file))
            return
        if not runtime_usable(self.hello):
            raise RuntimeFailure(missing_runtime(self.hello, self.device.url.python))
        self.session.send(
            {"op": "load", "threads": self.config.threads, "stateful": self.stateful, "single": single},
            blob=model_bytes(self.art.model_file),
        )

    def _fail(self, exc: Exception) -> None:
        self.failed = f"does not run on {self.device.url.name}: {exc}"
        self._flight.clear()
        if self.session is not None:
            self.session.close(abort=True)
            sweep(self.device.ssh, self.session)

    def submit(self, files: dict, inputs: dict, out_names: tuple[str, ...], ref_names: list[str]) -> None:
        """Prepare the batch on the host and send it to the device."""
        if self.failed:
            return
        try:
            if self.plan is None:
                ready = self._ready()
                self.plan = self.tflm.host(ready) if self.tflm else DeviceBindings(self.art.model_file, ready)
                self.batching = ready["batching"]
            try:
                feeds = self.plan.prepare(inputs)
            except EdgeToolError as exc:
                raise RuntimeFailure(f"the device's bindings do not fit the data: {exc}") from None
            if self.first is None:
                self.first = self._first_feeds(feeds)
            bindings = {n: self.plan.output_for(n, ref_names.index(n)) for n in out_names}
            self._flight.append((bindings, {f"t{i}": x for i, x in feeds.items()}))
            self._pending += 1
            self.session.send(_predict(bindings), self._flight[-1][1])
        except RuntimeFailure as exc:
            if not self._retry_single(exc):
                self._fail(exc)

    def _ready(self) -> dict:
        return self.session.receive(
            lambda h: answers.ready(h, tflm=bool(self.tflm)), activity=f"loading {self.what} (ready)"
        )

    @property
    def what(self) -> str:
        """The row's work in progress lines: the artefact on the device."""
        return f"{self.art.model_file.name} on {self.device.url.name}"

    def _retry_single(self, exc: RuntimeFailure) -> bool:
        """The runner died on its first batched invokes (a runtime that crashes at batch > 1): once, a new runner
        one sample per invoke, the batches in flight sent again. False when that is not the case or fails too."""
        if (
            self._produced
            or self._single
            or self.tflm
            or not self.session
            or not self.session.died
            or not self.plan
            or self.plan.batching != "dynamic"
        ):
            return False
        self._single = True
        sweep(self.device.ssh, self.session)
        try:
            self._open(single=True)
            self._ready()
            for bindings, feeds in self._flight:
                self.session.send(_predict(bindings), feeds)
        except RuntimeFailure as exc2:
            self._fail(RuntimeFailure(f"{exc}; again one sample per invoke: {exc2}"))
            return False
        return True

    def _receive_failed(self, exc: RuntimeFailure) -> dict | None:
        """A crash on the first batches: retried one sample per invoke (``_retry_single``); else the row fails."""
        if self._retry_single(exc):
            try:
                return self._receive()
            except RuntimeFailure as exc2:
                exc = exc2
        self._fail(exc)
        return None

    def _first_feeds(self, feeds: dict) -> dict:
        """What the latency loop feeds: the first sample (the file's fixed batch B, padded, when B > 1)."""
        b = 1 if self.tflm else self.plan.fixed_batch
        first = {}
        for idx, x in feeds.items():
            chunk = x[:b]
            if len(chunk) < b:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], b - len(chunk), axis=0)])
            first[f"t{idx}"] = chunk
        return first

    def _receive(self) -> dict[str, np.ndarray]:
        bindings, feeds = self._flight[0]
        n = len(next(iter(feeds.values())))
        header, arrays = self.session.receive(
            answers.predicted,
            answers.outputs_check(list(bindings.values()), n),
            activity=f"accuracy pass of {self.what}",
        )
        self._flight.pop(0)
        self._produced = True
        self.batching = header.get("batching", self.batching)
        return {n: self.plan.dequantize(b, arrays[f"y{k}"]) for k, (n, b) in enumerate(bindings.items())}

    def end_pass(self) -> None:
        """End the accuracy runner (it removes its temp dir on the device)."""
        if self.session is not None:
            self.session.close()

    def close(self, abort: bool = False) -> None:
        """End the runner at once (idempotent)."""
        if self.session is not None:
            self.session.close(abort)

    def wants_latency(self, config: EvalConfig) -> bool:
        """Whether this row's latency is measured (it ran the pass, and timing is on)."""
        return not self.failed and self.first is not None and bool(config.effective_runs or config.time_budget_s)

    def measure_latency(self, config: EvalConfig):
        """(LatencyStats, peak RSS MB) from a fresh runner on the device; RuntimeFailure when it fails."""
        session = RunnerSession(self.device.ssh)
        self.session = session
        session.send({"op": "load", "mode": "latency"}, blob=model_bytes(self.art.model_file))
        request = {
            "op": "latency",
            "threads": config.threads,
            "warmup": config.warmup,
            "runs": config.effective_runs,
            "time_budget_s": config.time_budget_s,
            "stateful": self.stateful,
            "outputs": [b.index for b in self.plan.outputs],
        }
        session.send({**request, **self.tflm.latency()} if self.tflm else request, self.first)
        answer = session.receive(answers.latency, activity=f"latency run of {self.what}")
        session.close()
        if self.tflm and answer.get("arena"):
            self.tflm.used = max(self.tflm.used or 0, int(answer["arena"]))
        return summarize(answer["times_ns"], answer["cold_start_ms"]), answer["peak_rss_mb"]

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency on the device (fresh runner) and the row, with the device's record."""
        lat = rss = None
        if self.wants_latency(config):
            try:
                lat, rss = self.fleet.latency(self) if self.fleet else self.measure_latency(config)
            except RuntimeFailure as exc:
                self.failed = f"does not run on {self.device.url.name}: latency run: {exc}"
                self.close(abort=True)
                sweep(self.device.ssh, self.session)
        self.close(abort=bool(self.failed))
        note = measured_note(self.hello)
        if self.tflm:
            tflm = self.hello.get("tflm")
            return self._row(
                label,
                reference,
                "tflite",
                fields,
                latency=lat,
                peak_rss_mb=rss,
                threads=1,
                runtime=f"tflite-micro {tflm}" if tflm else "none",
                batching="" if self.failed else self.batching,
                latency_note=f"TFLM reference kernels {note}; {self.tflm.note()}",
                arena=self.tflm.arena_record(),
                flash_bytes=self.art.size_bytes,
                device=device_record(self.device.url, self.tflm.facts(self.hello)),
            )
        return self._row(
            label,
            reference,
            "tflite",
            fields,
            latency=lat,
            peak_rss_mb=rss,
            threads=config.threads,
            runtime=" ".join(filter(None, (self.hello.get("runtime"), self.hello.get("runtime_version")))) or "none",
            latency_note=note,
            batching="" if self.failed else self.batching,
            device=device_record(self.device.url, self.hello),
        )


def _predict(bindings: dict) -> dict:
    """The ``predict`` request for these output bindings (answered as y0, y1, ... in this order)."""
    return {"op": "predict", "outputs": [b.index for b in bindings.values()]}
