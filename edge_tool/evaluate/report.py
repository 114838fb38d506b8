"""The eval Report (a frozen dataclass over the rows of ``rows``) and its JSON / Markdown renderers; HTML lives in
html_report. The columns and footer lines a runtime adds come from the runtime registry (``evaluate.runtimes``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from edge_tool.calibration.serial import spec
from edge_tool.core.textsafe import md, md_row
from edge_tool.device.facts import device_notes
from edge_tool.device.spread import spread_notes
from edge_tool.evaluate.lm_report import is_lm, lm_footer, lm_markdown
from edge_tool.evaluate.report_table import TASK_NUMERIC, reference_cells, result_cells, task_headers
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, ReferenceResult
from edge_tool.evaluate.runtimes import RUNTIMES, Column, columns, owner
from edge_tool.schemas.document import Document

__all__ = ["NUMERIC", "TABLE_HEADERS", "Report"]

_NONE = spec(omit="none")


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
        rows = [
            [
                f"{_short(ref.path)} (reference)",
                "tflite" if ref.path.lower().endswith(".tflite") else "SavedModel",
                "float32",
                _mb(ref.size_bytes),
                "1.00×",
                *reference_cells(self.task, ref),
                _ms(ref.latency, "p50"),
                _ms(ref.latency, "p99"),
            ]
        ]
        for r in self.results:
            rows.append(
                [
                    r.artifact,
                    r.format,
                    r.quant,
                    _mb(r.size_bytes),
                    f"{r.size_ratio:.2f}×",
                    *result_cells(self.task, r),
                    _ms(r.latency, "p50"),
                    _ms(r.latency, "p99"),
                ]
            )
        for column in self.extra_columns():
            rows[0].append(column.reference)
            for row, r in zip(rows[1:], self.results):
                row.append(column.cell(r))
        return rows

    def extra_columns(self) -> list[Column]:
        """The columns the runtimes of these rows add (TFLM's arena and flash, a --device row's device)."""
        return columns(self.results)

    def headers(self) -> list[str]:
        """Column names of ``table_rows``."""
        return [
            *TABLE_HEADERS[:5],
            *task_headers(self.task),
            *TABLE_HEADERS[8:],
            *(c.header for c in self.extra_columns()),
        ]

    def to_markdown(self) -> str:
        """A Markdown section: the table, then data, runtime and machine lines."""
        head = "| " + " | ".join(self.headers()) + " |"
        sep = "|" + "|".join("---:" if h in NUMERIC else "---" for h in self.headers()) + "|"
        lines = ["## edgetool eval", "", head, sep]
        lines += [md_row(row) for row in self.table_rows()]
        lines += ["", *[f"- {md(line)}" for line in self.footer_lines()]]
        lines += lm_markdown(self) if is_lm(self) else []
        for r in self.results:
            if r.per_layer:
                lines += [
                    "",
                    f"### Worst quantized layers of {md(r.artifact)} (rmse/scale)",
                    "",
                    "| op | tensor | rmse/scale | max abs error |",
                    "|---|---|---:|---:|",
                ]
                lines += [
                    md_row([e.op_name, e.tensor_name, f"{e.rmse_over_scale:.3f}", f"{e.max_abs_error:.4g}"])
                    for e in r.per_layer
                ]
        return "\n".join(lines) + "\n"

    def footer_lines(self) -> list[str]:
        """Data, timing settings, machine and notes, one sentence each."""
        s = self.settings
        runs = f"{s['runs']} runs" if s.get("runs") else f"a {s['time_budget_s']} s budget"
        head = lm_footer(self) if is_lm(self) else self._sample_footer(runs)
        return [
            *head,
            *(line for spec in RUNTIMES.values() if spec.facts for line in spec.facts(self.results)),
            *device_notes(self.results),
            *spread_notes(self.results),
            *self.notes,
            *(
                f"{r.artifact}: {r.runtime} — {r.latency_note}."
                for r in self.results
                if not r.failed and (spec := owner(r)) is not None and spec.row_notes
            ),
            *(f"✗ {r.artifact} {r.failed}" for r in self.results if r.failed),
        ]

    def _sample_footer(self, runs: str) -> list[str]:
        m, s = self.machine, self.settings
        return [
            f"Data: {self.data.get('summary')} (reference output {self.reference.output!r}).",
            f"Latency: batch 1, {s['threads']} thread(s), {s['warmup']} warm-up calls then {runs}; "
            "p50/p99 of set_tensor+invoke+get_tensor with the LiteRT interpreter, each .tflite in a fresh process "
            f"(TFJS rows: tfjs in Node, not a browser; reference row: {'LiteRT' if self.reference.path.lower().endswith('.tflite') else 'TensorFlow'}"
            f"{_threads_note(s.get('reference_latency_threads'))}).",
            f"Accuracy pass: every artefact in its own process, {s.get('accuracy_pass_threads', 1)} LiteRT thread(s) each, "
            "the LiteRT workers taking turns while the reference runs, "
            "batched where the file allows (see each row's accuracy_pass in the JSON); recurrent state reset "
            "before every sample, except in a file that keeps state in resource variables (Keras stateful=True): "
            "there the samples are one stream in file order, each side from its initial state (a fresh interpreter, "
            "the SavedModel freshly loaded), compared sample by sample.",
            f"Machine: {m.get('cpu')} ({m.get('cores_logical')} logical cores), Python {m.get('python')}, "
            f"TensorFlow {m.get('tensorflow')}, LiteRT {m.get('litert')}.",
        ]


TABLE_HEADERS = ["artifact", "format", "mode", "size", "size ×", "accuracy", "drop", "agreement", "p50 ms", "p99 ms"]
NUMERIC = {
    "size",
    "size ×",
    "accuracy",
    "drop",
    "agreement",
    "p50 ms",
    "p99 ms",
    *TASK_NUMERIC,
    *(c.header for s in RUNTIMES.values() for c in s.columns if c.numeric),
}


def _short(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _ms(lat: LatencyStats | None, key: str) -> str:
    return "—" if lat is None else f"{getattr(lat, key):.3f}"


def _threads_note(threads: int | None) -> str:
    """ ", N thread(s)" for the reference row's latency, or "" when TensorFlow chose (its default: every core)."""
    return f", {threads} thread(s)" if threads else ", TensorFlow's default threads"
