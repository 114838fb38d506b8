"""The rows of an eval report (frozen dataclasses) and their JSON form: one per artefact, the reference's, their
latency statistics and per-layer errors. Below the report and the runners: runners build rows, the report
renders them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LatencyStats:
    """Per-inference latency in milliseconds; ``samples_ms`` keeps (a subsample of) the raw timed calls."""

    p50: float
    p90: float
    p99: float
    mean: float
    std: float
    cold_start: float | None
    runs: int
    samples_ms: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self, samples: bool = False) -> dict:
        """JSON form; raw samples only when asked."""
        d = {"p50": self.p50, "p90": self.p90, "p99": self.p99, "mean": self.mean, "std": self.std,
             "cold_start": self.cold_start, "runs": self.runs}
        if samples:
            d["samples"] = list(self.samples_ms)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LatencyStats:
        """Inverse of to_dict(samples=True)."""
        return cls(d["p50"], d["p90"], d["p99"], d["mean"], d["std"], d["cold_start"], d["runs"],
                   tuple(d.get("samples", ())))


@dataclass(frozen=True)
class LayerError:
    """One layer's quantization error from the QuantizationDebugger (rmse/scale: ~0.29 is ideal rounding)."""

    op_name: str
    tensor_name: str
    rmse_over_scale: float
    max_abs_error: float
    scale: float

    def to_dict(self) -> dict:
        """JSON form."""
        return {"op": self.op_name, "tensor": self.tensor_name, "rmse_over_scale": self.rmse_over_scale,
                "max_abs_error": self.max_abs_error, "scale": self.scale}

    @classmethod
    def from_dict(cls, d: dict) -> LayerError:
        """Inverse of to_dict."""
        return cls(d["op"], d["tensor"], d["rmse_over_scale"], d["max_abs_error"], d["scale"])


@dataclass(frozen=True)
class ArtifactResult:
    """Everything measured for one artefact; ``failed`` holds the reason when the runtime could not run it (the
    metrics it did not reach are None)."""

    artifact: str
    format: str
    quant: str
    size_bytes: int
    size_ratio: float
    accuracy: float | None
    top_k_accuracy: float | None
    reference_accuracy: float | None
    accuracy_drop: float | None
    top1_agreement: float | None
    max_abs_error: float | None
    mean_abs_error: float | None
    cosine: float | None
    latency: LatencyStats | None
    peak_rss_mb: float | None
    threads: int
    runtime: str
    latency_note: str = ""
    per_layer: tuple[LayerError, ...] | None = None
    failed: str | None = None
    batching: str = ""
    arena: dict | None = None          # --runtime tflm: the measured tensor arena (edge_tool.micro.tflm.ArenaSize)
    flash_bytes: int | None = None     # --runtime tflm: bytes of the model array in flash
    device: dict | None = None         # --device: where it ran (edge_tool.evaluate.device.facts.device_record)
    metrics: dict | None = None        # the task's metrics (edge_tool.evaluate.tasks), keys per task
    drift: dict | None = None          # the task's drift against the reference
    metric_drop: float | None = None   # reference - artefact of the task's main metric (what --max-drop gates)

    def to_dict(self) -> dict:
        """JSON form (the ``results`` entries of the report); ``failed`` only on rows that could not run."""
        d = {
            "artifact": self.artifact, "format": self.format, "quant": self.quant, "size_bytes": self.size_bytes,
            "size_ratio": self.size_ratio, "accuracy": self.accuracy, "top_k_accuracy": self.top_k_accuracy,
            "reference_accuracy": self.reference_accuracy, "accuracy_drop": self.accuracy_drop,
            "top1_agreement": self.top1_agreement, "max_abs_error": self.max_abs_error,
            "mean_abs_error": self.mean_abs_error, "cosine": self.cosine,
            "latency_ms": self.latency.to_dict() if self.latency else None,
            "peak_rss_mb": self.peak_rss_mb, "threads": self.threads, "runtime": self.runtime,
        }
        if self.metrics is not None or self.drift is not None:
            d.update(metrics=self.metrics, drift=self.drift, metric_drop=self.metric_drop)
        if self.latency_note:
            d["latency_note"] = self.latency_note
        if self.per_layer is not None:
            d["per_layer"] = [e.to_dict() for e in self.per_layer]
        if self.batching:
            d["accuracy_pass"] = self.batching
        if self.failed:
            d["failed"] = self.failed
        if self.arena is not None:
            d["tensor_arena"], d["flash_bytes"] = self.arena, self.flash_bytes
        if self.device is not None:
            d["device"] = self.device
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ArtifactResult:
        """Inverse of to_dict (``d`` validated by Report.from_dict)."""
        plain = {k: d[k] for k in _PLAIN_RESULT_KEYS}
        layers = d.get("per_layer")
        return cls(**plain, latency=_latency(d["latency_ms"]), latency_note=d.get("latency_note", ""),
                   per_layer=None if layers is None else tuple(LayerError.from_dict(e) for e in layers),
                   failed=d.get("failed"), batching=d.get("accuracy_pass", ""), arena=d.get("tensor_arena"),
                   flash_bytes=d.get("flash_bytes"), metrics=d.get("metrics"), drift=d.get("drift"),
                   metric_drop=d.get("metric_drop"), device=d.get("device"))


@dataclass(frozen=True)
class ReferenceResult:
    """The reference SavedModel's row: its accuracy and its TensorFlow latency."""

    path: str
    size_bytes: int
    accuracy: float | None
    top_k_accuracy: float | None
    latency: LatencyStats | None
    runtime: str
    output: str
    metrics: dict | None = None

    def to_dict(self) -> dict:
        """JSON form (the ``reference`` object of the report)."""
        d = {"saved_model": self.path, "size_bytes": self.size_bytes, "accuracy": self.accuracy,
             "top_k_accuracy": self.top_k_accuracy, "latency_ms": self.latency.to_dict() if self.latency else None,
             "runtime": self.runtime, "output": self.output}
        return d if self.metrics is None else {**d, "metrics": self.metrics}

    @classmethod
    def from_dict(cls, d: dict) -> ReferenceResult:
        """Inverse of to_dict."""
        return cls(d["saved_model"], d["size_bytes"], d["accuracy"], d["top_k_accuracy"], _latency(d["latency_ms"]),
                   d["runtime"], d["output"], d.get("metrics"))


_PLAIN_RESULT_KEYS = ("artifact", "format", "quant", "size_bytes", "size_ratio", "accuracy", "top_k_accuracy",
                      "reference_accuracy", "accuracy_drop", "top1_agreement", "max_abs_error", "mean_abs_error",
                      "cosine", "peak_rss_mb", "threads", "runtime")


def _latency(d: dict | None) -> LatencyStats | None:
    return None if d is None else LatencyStats.from_dict(d)
