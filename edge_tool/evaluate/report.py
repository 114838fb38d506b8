"""The eval Report (frozen dataclasses) and its JSON / Markdown renderers; HTML lives in html_report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from calibration.serial import Record, spec
from edge_tool.evaluate.device.facts import device_notes, with_device_cells
from edge_tool.evaluate.report_table import TASK_NUMERIC, reference_cells, result_cells, task_headers
from edge_tool.schemas.document import Document
from edge_tool.textsafe import md, md_row


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


@dataclass(frozen=True)
class LayerError(Record):
    """One layer's quantization error from the QuantizationDebugger (rmse/scale: ~0.29 is ideal rounding)."""

    op_name: str = field(metadata=spec("op"))
    tensor_name: str = field(metadata=spec("tensor"))
    rmse_over_scale: float
    max_abs_error: float
    scale: float


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
    # the task's metrics (edge_tool.evaluate.tasks, keys per task), its drift against the reference, and the
    # reference - artefact of its main metric (what --max-drop gates): written together, after ``runtime``
    metrics: dict | None = field(default=None, metadata=spec(when=_measured_task))
    drift: dict | None = field(default=None, metadata=spec(when=_measured_task))
    metric_drop: float | None = field(default=None, metadata=spec(when=_measured_task))

    json_order = ("artifact", "format", "quant", "size_bytes", "size_ratio", "accuracy", "top_k_accuracy",
                  "reference_accuracy", "accuracy_drop", "top1_agreement", "max_abs_error", "mean_abs_error",
                  "cosine", "latency", "peak_rss_mb", "threads", "runtime", "metrics", "drift", "metric_drop",
                  "latency_note", "per_layer", "batching", "failed")


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


@dataclass(frozen=True)
class Report(Document):
    """A full eval: reference row, one result per artefact, data and machine description, settings; its JSON form
    (``to_dict``, validated ``from_dict``/``read``) is schema eval.schema.json's."""

    schema_name = "eval"
    file_name = "eval report"
    json_order = ("results", "reference")

    reference: ReferenceResult
    results: tuple[ArtifactResult, ...]
    data: dict
    machine: dict
    settings: dict
    notes: tuple[str, ...] = ()
    timings_s: dict = field(default_factory=dict)  # wall seconds of eval's own stages
    task: dict | None = field(default=None, metadata=_NONE)  # {name, reason, assumed, given, main_metric, ...}

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def table_rows(self) -> list[list[str]]:
        """The comparison table (reference first) as display strings, shared by terminal, Markdown and HTML."""
        ref = self.reference
        rows = [[f"{_short(ref.path)} (reference)", "SavedModel", "float32", _mb(ref.size_bytes), "1.00×",
                 *reference_cells(self.task, ref), _ms(ref.latency, "p50"), _ms(ref.latency, "p99")]]
        for r in self.results:
            rows.append([r.artifact, r.format, r.quant, _mb(r.size_bytes), f"{r.size_ratio:.2f}×",
                         *result_cells(self.task, r), _ms(r.latency, "p50"), _ms(r.latency, "p99")])
        if self.has_micro:
            rows[0] += ["—", "—"]
            for row, r in zip(rows[1:], self.results):
                row += ["—", "—"] if r.arena is None else [f"{r.arena['minimum_bytes'] / 1024:.1f} KiB",
                                                           f"{r.flash_bytes / 1024:.1f} KiB"]
        return with_device_cells(rows, self.results)

    @property
    def has_micro(self) -> bool:
        """True when some row ran in TFLite Micro (the table then gains arena and flash columns)."""
        return any(r.arena is not None for r in self.results)

    def headers(self) -> list[str]:
        """Column names of ``table_rows``."""
        micro = MICRO_HEADERS if self.has_micro else []
        device = ["device"] if any(r.device is not None for r in self.results) else []
        return [*TABLE_HEADERS[:5], *task_headers(self.task), *TABLE_HEADERS[8:], *micro, *device]

    def to_markdown(self) -> str:
        """A Markdown section: the table, then data, runtime and machine lines."""
        head = "| " + " | ".join(self.headers()) + " |"
        sep = "|" + "|".join("---:" if h in NUMERIC else "---" for h in self.headers()) + "|"
        lines = ["## edgetool eval", "", head, sep]
        lines += [md_row(row) for row in self.table_rows()]
        lines += ["", *[f"- {md(line)}" for line in self.footer_lines()]]
        for r in self.results:
            if r.per_layer:
                lines += ["", f"### Worst quantized layers of {md(r.artifact)} (rmse/scale)", "",
                          "| op | tensor | rmse/scale | max abs error |", "|---|---|---:|---:|"]
                lines += [md_row([e.op_name, e.tensor_name, f"{e.rmse_over_scale:.3f}", f"{e.max_abs_error:.4g}"])
                          for e in r.per_layer]
        return "\n".join(lines) + "\n"

    def footer_lines(self) -> list[str]:
        """Data, timing settings, machine and notes, one sentence each."""
        m, s = self.machine, self.settings
        runs = f"{s['runs']} runs" if s.get("runs") else f"a {s['time_budget_s']} s budget"
        return [
            f"Data: {self.data.get('summary')} (reference output {self.reference.output!r}).",
            f"Latency: batch 1, {s['threads']} thread(s), {s['warmup']} warm-up calls then {runs}; "
            "p50/p99 of set_tensor+invoke+get_tensor with the LiteRT interpreter, each .tflite in a fresh process "
            "(TFJS rows: tfjs in Node, not a browser; reference row: TensorFlow"
            f"{_threads_note(s.get('reference_latency_threads'))}).",
            f"Accuracy pass: every artefact in its own process, {s.get('accuracy_pass_threads', 1)} LiteRT thread(s) each, "
            "the LiteRT workers taking turns while the reference runs, "
            "batched where the file allows (see each row's accuracy_pass in the JSON); recurrent state reset "
            "before every sample.",
            f"Machine: {m.get('cpu')} ({m.get('cores_logical')} logical cores), Python {m.get('python')}, "
            f"TensorFlow {m.get('tensorflow')}, LiteRT {m.get('litert')}.",
            *self._micro_lines(),
            *device_notes(self.results),
            *self.notes,
            *(f"{r.artifact}: {r.runtime} — {r.latency_note}." for r in self.results
              if r.format == "tfjs" and not r.failed),
            *(f"✗ {r.artifact} {r.failed}" for r in self.results if r.failed),
        ]

    def _micro_lines(self) -> list[str]:
        return [f"TFLM {r.artifact}: tensor arena minimum {r.arena['minimum_bytes']} bytes (recommended "
                f"{r.arena['recommended_bytes']}), flash {r.flash_bytes} bytes; latency is {r.latency_note}."
                for r in self.results if r.arena is not None]


TABLE_HEADERS = ["artifact", "format", "mode", "size", "size ×", "accuracy", "drop", "agreement", "p50 ms", "p99 ms"]
MICRO_HEADERS = ["arena", "flash"]
NUMERIC = {"size", "size ×", "accuracy", "drop", "agreement", "p50 ms", "p99 ms", "arena", "flash", *TASK_NUMERIC}


def _short(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _ms(lat: LatencyStats | None, key: str) -> str:
    return "—" if lat is None else f"{getattr(lat, key):.3f}"


def _threads_note(threads: int | None) -> str:
    """", N thread(s)" for the reference row's latency, or "" when TensorFlow chose (its default: every core)."""
    return f", {threads} thread(s)" if threads else ", TensorFlow's default threads"
