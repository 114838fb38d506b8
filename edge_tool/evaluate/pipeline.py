"""run_eval: one streaming pass (reference + every artefact per batch, running metrics), then latency and
(optionally) per-layer error for every artefact."""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, UsageError, collect_and_raise
from edge_tool.evaluate import metrics
from edge_tool.evaluate.artifacts import Artifact, describe, saved_model_size
from edge_tool.evaluate.config import ArtifactFormat, EvalConfig
from edge_tool.evaluate.data import EvalStream
from edge_tool.evaluate.latency import measure_tflite, measure_tflite_subprocess, summarize
from edge_tool.evaluate.report import ArtifactResult, ReferenceResult, Report
from edge_tool.fsutil import atomic_file, check_output_file


def _check_outputs(config: EvalConfig) -> None:
    problems = []
    for path in config.report_paths.values():
        try:
            check_output_file(path, config.force)
        except UsageError as exc:
            problems.append(str(exc))
    collect_and_raise(problems, UsageError)


def _describe_all(paths: tuple[Path, ...]) -> list[Artifact]:
    arts, problems = [], []
    for p in paths:
        try:
            arts.append(describe(p))
        except UsageError as exc:
            problems.append(str(exc))
    collect_and_raise(problems, UsageError, "Some artefacts cannot be evaluated:" if len(problems) > 1 else "")
    return arts


def skip_tfjs_without_node(arts: list[Artifact]) -> tuple[list[Artifact], list[str]]:
    """Drop TFJS artefacts when ``node`` is not on PATH (the .tflite rows still run), with a note saying so.

    When every artefact is TFJS nothing is dropped, so the run stops with the error naming what to install.
    """
    import shutil  # noqa: PLC0415

    tfjs = [a for a in arts if a.format is ArtifactFormat.TFJS]
    if not tfjs or len(tfjs) == len(arts) or shutil.which("node"):
        return arts, []
    note = (f"Skipped {', '.join(a.label for a in tfjs)}: evaluating a TFJS model runs tfjs in Node.js (node on PATH, "
            ">= 18), which was not found; install Node.js to get these rows.")
    return [a for a in arts if a.format is not ArtifactFormat.TFJS], [note]


def _labels(arts: list[Artifact]) -> list[str]:
    counts = Counter(a.label for a in arts)
    return [a.label if counts[a.label] == 1 else str(a.given) for a in arts]


def primary_output(outputs: dict[str, np.ndarray]) -> str:
    """The output the metrics use: the first (by name) that looks like class scores, else the first."""
    names = sorted(outputs)
    for n in names:
        if outputs[n].ndim >= 2 and outputs[n].shape[-1] > 1:
            return n
    return names[0]


def run_eval(config: EvalConfig) -> Report:
    """Evaluate every artefact of ``config``; raises UsageError-family errors (exit 2) before measuring.

    One streaming pass over the data: each batch goes through the reference (batched) and every artefact
    (batch 1 for LiteRT, the batch for TFJS in Node), and only running metric totals are kept, so memory is
    O(batch) whatever the data size. Latency is measured afterwards on the first sample.
    """
    from edge_tool.evaluate.machine import machine_info  # noqa: PLC0415
    from edge_tool.evaluate.per_layer import MAX_DEBUG_SAMPLES  # noqa: PLC0415
    from edge_tool.evaluate.reference import ReferenceModel  # noqa: PLC0415
    from edge_tool.modelio import validate_saved_model_dir  # noqa: PLC0415

    _check_outputs(config)
    validate_saved_model_dir(config.reference)
    arts, notes = skip_tfjs_without_node(_describe_all(config.artifacts))
    ref = ReferenceModel(config.reference)
    keep = MAX_DEBUG_SAMPLES if config.per_layer and any(_per_layer_eligible(a) for a in arts) else 0
    data = EvalStream(config.data, ref.input_specs, seed=config.seed, batch_size=config.batch_size, keep_first=keep)
    if config.max_drop is not None and data.labels is None:
        raise UsageError(f"--max-drop needs labels, but --data {config.data} has none (add y to it).")
    with ExitStack() as stack:
        runners = [_open_runner(art, config, stack) for art in arts]
        first = _stream(ref, data, runners, config.top_k)
        ref_task = first.ref_task.result()
        ref_lat = ref.latency(first.sample, config.warmup, config.effective_runs, config.time_budget_s)
        reference = ReferenceResult(str(config.reference), saved_model_size(config.reference), ref_task["accuracy"],
                                    ref_task["top_k_accuracy"], ref_lat, "tensorflow (SavedModel, batch 1)",
                                    first.out_name)
        results = [r.result(label, config, reference, _drift_fields(acc, reference))
                   for r, acc, label in zip(runners, first.accs, _labels(arts))]
    if config.per_layer:
        results = _with_per_layer(results, arts, config, data, ref)
        notes += _per_layer_notes(arts, _labels(arts))
    settings = {"threads": config.threads, "warmup": config.warmup, "runs": config.effective_runs,
                "time_budget_s": config.time_budget_s, "top_k": config.top_k, "max_drop": config.max_drop,
                "max_latency_ms": config.max_latency_ms}
    data_desc = {"path": str(config.data), "summary": data.summary, "samples": data.consumed,
                 "labels": data.labels is not None, "warnings": list(data.warnings), "source": data.details()}
    return Report(reference, tuple(results), data_desc, machine_info(), settings, tuple(notes))


@dataclass
class _Pass:
    """What the streaming pass leaves: the primary output's name, the first sample, running metrics."""

    out_name: str
    sample: dict
    ref_task: metrics.TaskAccumulator
    accs: list


def _stream(ref, data: EvalStream, runners: list, top_k: int) -> _Pass:
    accs = [metrics.DriftAccumulator(top_k) for _ in runners]
    state: _Pass | None = None
    for inputs, labels in data.batches():
        ref_out = ref.predict(inputs)
        if state is None:
            state = _Pass(primary_output(ref_out), {k: v[:1].copy() for k, v in inputs.items()},
                          metrics.TaskAccumulator(top_k), accs)
            ref_names = sorted(ref_out)
        ref_y = ref_out[state.out_name]
        state.ref_task.update(ref_y, labels)
        for runner, acc in zip(runners, accs):
            acc.update(ref_y, runner.outputs(inputs, state.out_name, ref_names), labels)
    if state is None:
        raise DataError(f"--data {data.path} yielded no samples.")
    return state


def _drift_fields(acc: metrics.DriftAccumulator, reference: ReferenceResult) -> dict:
    task = acc.task.result()
    drop = None if task["accuracy"] is None else reference.accuracy - task["accuracy"]
    return {"accuracy": task["accuracy"], "top_k_accuracy": task["top_k_accuracy"],
            "reference_accuracy": reference.accuracy, "accuracy_drop": drop, **acc.drift()}


def _open_runner(art: Artifact, config: EvalConfig, stack: ExitStack):
    if art.format is ArtifactFormat.TFLITE:
        return _TfliteRunner(art, config)
    from edge_tool.evaluate.tfjs_runner import TfjsSession  # noqa: PLC0415

    return _TfjsRunner(art, stack.enter_context(TfjsSession(art.model_file)))


class _TfliteRunner:
    """A .tflite artefact during the pass: batch-1 LiteRT outputs of each batch, then its latency and row."""

    def __init__(self, art: Artifact, config: EvalConfig):
        from edge_tool.evaluate.tflite_runner import TfliteModel  # noqa: PLC0415

        self.art = art
        self.model = TfliteModel(art.model_file, threads=config.threads)
        self.first_feeds: dict | None = None

    def outputs(self, inputs: dict, out_name: str, ref_names: list[str]) -> np.ndarray:
        """The artefact's (dequantized) output matching the reference's ``out_name`` for one batch."""
        feeds = self.model.prepare(inputs)
        if self.first_feeds is None:
            self.first_feeds = {idx: x[:1].copy() for idx, x in feeds.items()}
        binding = self.model.output_for(out_name, ref_names.index(out_name))
        return self.model.dequantize(binding, self.model.predict(feeds)[binding.index])

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency (fresh process unless configured otherwise) and the artefact's row."""
        out_idx = [b.index for b in self.model.outputs]
        args = (self.art.model_file, self.first_feeds, out_idx, config.threads, config.warmup,
                config.effective_runs, config.time_budget_s)
        if config.latency_in_subprocess:
            lat, rss = measure_tflite_subprocess(*args)
        else:
            lat, rss = measure_tflite(*args), None
        art = self.art
        return ArtifactResult(
            artifact=label, format="tflite", quant=art.quant, size_bytes=art.size_bytes,
            size_ratio=art.size_bytes / reference.size_bytes, latency=lat, peak_rss_mb=rss, threads=config.threads,
            runtime=self.model.runtime, **fields,
        )


class _TfjsRunner:
    """A TFJS artefact during the pass: a Node session fed batch by batch, then its latency and row."""

    def __init__(self, art: Artifact, session):
        self.art, self.session = art, session
        self.first: dict | None = None

    def outputs(self, inputs: dict, out_name: str, ref_names: list[str]) -> np.ndarray:
        """The model's output matching the reference's ``out_name`` (by name, else by position) for one batch."""
        if self.first is None:
            self.first = {k: v[:1].copy() for k, v in inputs.items()}
        out = self.session.predict(inputs)
        name = out_name if out_name in out else sorted(out)[ref_names.index(out_name)]
        return out[name]

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency in the same Node session (batch 1, first sample) and the artefact's row."""
        times = ()
        if config.effective_runs or config.time_budget_s:
            times = self.session.latency(self.first, config.warmup, config.effective_runs, config.time_budget_s)
        lat = summarize(np.asarray(times) * 1e6, None) if times else None
        art = self.art
        return ArtifactResult(
            artifact=label, format="tfjs", quant=art.quant, size_bytes=art.size_bytes,
            size_ratio=art.size_bytes / reference.size_bytes, latency=lat, peak_rss_mb=None, threads=1,
            runtime=self.session.version,
            latency_note="tfjs cpu backend in Node (single-threaded JS), not a browser figure", **fields,
        )


def _per_layer_eligible(art: Artifact) -> bool:
    return art.format is ArtifactFormat.TFLITE and art.quant == "int8"


def _with_per_layer(results: list[ArtifactResult], arts: list[Artifact], config: EvalConfig, data: EvalStream,
                    ref) -> list[ArtifactResult]:
    """Attach the debugger's worst layers (computed once, on the first MAX_DEBUG_SAMPLES samples) to int8 rows."""
    from dataclasses import replace  # noqa: PLC0415

    from edge_tool.evaluate.per_layer import worst_layers  # noqa: PLC0415

    if not any(_per_layer_eligible(a) for a in arts):
        return results
    order = [s.name for s in ref.input_specs]
    worst = worst_layers(config.reference, data.kept_inputs(), order, config.per_layer_top)
    return [replace(r, per_layer=worst) if _per_layer_eligible(a) else r for r, a in zip(results, arts)]


def _per_layer_notes(arts: list[Artifact], labels: list[str]) -> list[str]:
    from edge_tool.evaluate.per_layer import MAX_DEBUG_SAMPLES  # noqa: PLC0415

    notes = []
    if any(_per_layer_eligible(a) for a in arts):
        notes.append("Per-layer errors: tf.lite.experimental.QuantizationDebugger on an int8 model rebuilt from the "
                     f"reference with the first {MAX_DEBUG_SAMPLES} eval samples as representative dataset (the debugger "
                     "needs the float model); "
                     "they describe that int8 quantization, not the artefact's own scales.")
    skipped = [lab for a, lab in zip(arts, labels) if not _per_layer_eligible(a)]
    if skipped:
        notes.append(f"--per-layer applies to int8 .tflite artefacts only; skipped: {', '.join(skipped)}.")
    return notes


def budget_violations(report: Report, config: EvalConfig) -> list[tuple[str, str]]:
    """(artifact, message) per broken budget: accuracy drop over --max-drop, LiteRT p50 over --max-latency-ms."""
    lines = []
    for r in report.results:
        if config.max_drop is not None and r.accuracy_drop is not None and r.accuracy_drop > config.max_drop:
            lines.append((r.artifact, f"{r.artifact}: accuracy drop {100 * r.accuracy_drop:.2f} pt exceeds --max-drop "
                         f"{config.max_drop:g} ({100 * config.max_drop:.2f} pt) by "
                         f"{100 * (r.accuracy_drop - config.max_drop):.2f} pt"))
        if (config.max_latency_ms is not None and r.format == "tflite" and r.latency is not None
                and r.latency.p50 > config.max_latency_ms):
            lines.append((r.artifact, f"{r.artifact}: p50 latency {r.latency.p50:.3f} ms exceeds --max-latency-ms "
                         f"{config.max_latency_ms:g} by {r.latency.p50 - config.max_latency_ms:.3f} ms"))
    return lines


def write_reports(report: Report, config: EvalConfig, failing: set[str]) -> list[Path]:
    """Write the --json / --markdown / --html files asked for (atomically); return their paths."""
    renderers = {"json": report.to_json, "markdown": report.to_markdown, "html": lambda: report.to_html(failing)}
    written = []
    for kind, path in config.report_paths.items():
        text = renderers[kind]()
        with atomic_file(path, config.force) as tmp:
            tmp.write_text(text, encoding="utf-8")
        written.append(path)
    return written
