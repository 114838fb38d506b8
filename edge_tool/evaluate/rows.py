"""The rows of an eval report (frozen dataclasses; JSON through ``calibration.serial``): one per artefact, the
reference's, their latency statistics and per-layer errors. Below the report and the runners: runners build rows,
the report renders them."""

from __future__ import annotations

from dataclasses import dataclass, field

from edge_tool.calibration.serial import Record, spec
from edge_tool.tflite_converter.per_layer import LayerError


@dataclass(frozen=True)
class LatencyStats(Record):
    """Per-inference latency in milliseconds; ``samples_ms`` keeps (a subsample of) the raw timed calls: read from
    a latency worker's ``samples``, never written into the report (nor compared)."""

    p50: float
    p90: float
    p99: float
    mean: float
    std: float
    cold_start: float | None
    runs: int
    samples_ms: tuple[float, ...] = field(default=(), repr=False, compare=False, metadata=spec("samples", write=False))


def _measured_task(r: ArtifactResult) -> bool:
    return r.metrics is not None or r.drift is not None


def _ran_in_tflm(r: ArtifactResult) -> bool:
    return r.arena is not None


_NONE, _EMPTY = spec(omit="none"), spec(omit="empty")


@dataclass(frozen=True)
class ArtifactResult(Record):
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
    latency: LatencyStats | None = field(metadata=spec("latency_ms"))
    peak_rss_mb: float | None
    threads: int
    runtime: str
    latency_note: str = field(default="", metadata=_EMPTY)
    per_layer: tuple[LayerError, ...] | None = field(default=None, metadata=_NONE)
    failed: str | None = field(default=None, metadata=_EMPTY)  # only on rows that could not run
    batching: str = field(default="", metadata=spec("accuracy_pass", omit="empty"))
    # --runtime tflm: the measured tensor arena (edge_tool.micro.tflm.ArenaSize) and the model array's flash bytes
    arena: dict | None = field(default=None, metadata=spec("tensor_arena", omit="none"))
    flash_bytes: int | None = field(default=None, metadata=spec(when=_ran_in_tflm))
    device: dict | None = field(default=None, metadata=_NONE)  # --device: where it ran (device.facts.device_record)
    spread: dict | None = field(default=None, metadata=_NONE)  # --device: outputs against the host row (device.spread)
    # the task's metrics (edge_tool.tasks, keys per task), its drift against the reference, and the
    # reference - artefact of its main metric (what --max-drop gates): written together, after ``runtime``
    metrics: dict | None = field(default=None, metadata=spec(when=_measured_task))
    drift: dict | None = field(default=None, metadata=spec(when=_measured_task))
    metric_drop: float | None = field(default=None, metadata=spec(when=_measured_task))

    json_order = (
        "artifact",
        "format",
        "quant",
        "size_bytes",
        "size_ratio",
        "accuracy",
        "top_k_accuracy",
        "reference_accuracy",
        "accuracy_drop",
        "top1_agreement",
        "max_abs_error",
        "mean_abs_error",
        "cosine",
        "latency",
        "peak_rss_mb",
        "threads",
        "runtime",
        "metrics",
        "drift",
        "metric_drop",
        "latency_note",
        "per_layer",
        "batching",
        "failed",
    )


@dataclass(frozen=True)
class ReferenceResult(Record):
    """The reference SavedModel's row: its accuracy and its TensorFlow latency."""

    path: str = field(metadata=spec("saved_model"))
    size_bytes: int
    accuracy: float | None
    top_k_accuracy: float | None
    latency: LatencyStats | None = field(metadata=spec("latency_ms"))
    runtime: str
    output: str
    metrics: dict | None = field(default=None, metadata=_NONE)
