"""The eval Report (frozen dataclasses) and its JSON / Markdown renderers; HTML lives in html_report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.evaluate.device.facts import device_notes, with_device_cells
from edge_tool.evaluate.report_table import TASK_NUMERIC, reference_cells, result_cells, task_headers
from edge_tool.litert.per_layer import LayerError
from edge_tool.schemas import check, read_json
from edge_tool.core.textsafe import md, md_row


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
    metrics: dict | None = None        # the task's metrics (edge_tool.tasks), keys per task
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


@dataclass(frozen=True)
class Report:
    """A full eval: reference row, one result per artefact, data and machine description, settings."""

    reference: ReferenceResult
    results: tuple[ArtifactResult, ...]
    data: dict
    machine: dict
    settings: dict
    notes: tuple[str, ...] = ()
    timings_s: dict = field(default_factory=dict)
    task: dict | None = None  # {name, reason, assumed, given, main_metric, higher_is_better}

    def to_dict(self) -> dict:
        """JSON-ready dict (``timings_s``: wall seconds of eval's own stages)."""
        d = {"results": [r.to_dict() for r in self.results], "reference": self.reference.to_dict(),
             "data": self.data, "machine": self.machine, "settings": self.settings, "notes": list(self.notes),
             "timings_s": self.timings_s}
        return d if self.task is None else {**d, "task": self.task}

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, d, what: str = "eval report") -> Report:
        """Validate ``d`` against the published schema (eval.schema.json) and build; DataError naming ``what``."""
        check(d, "eval", what)
        return cls(ReferenceResult.from_dict(d["reference"]), tuple(ArtifactResult.from_dict(r) for r in d["results"]),
                   d["data"], d["machine"], d["settings"], tuple(d["notes"]), d["timings_s"], d.get("task"))

    @classmethod
    def read(cls, path: Path) -> Report:
        """Read and validate an eval JSON report (a possibly hostile file)."""
        return cls.from_dict(read_json(path, "eval"), str(path))

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


_PLAIN_RESULT_KEYS = ("artifact", "format", "quant", "size_bytes", "size_ratio", "accuracy", "top_k_accuracy",
                      "reference_accuracy", "accuracy_drop", "top1_agreement", "max_abs_error", "mean_abs_error",
                      "cosine", "peak_rss_mb", "threads", "runtime")


def _latency(d: dict | None) -> LatencyStats | None:
    return None if d is None else LatencyStats.from_dict(d)


def _short(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _ms(lat: LatencyStats | None, key: str) -> str:
    return "—" if lat is None else f"{getattr(lat, key):.3f}"


def _threads_note(threads: int | None) -> str:
    """", N thread(s)" for the reference row's latency, or "" when TensorFlow chose (its default: every core)."""
    return f", {threads} thread(s)" if threads else ", TensorFlow's default threads"
