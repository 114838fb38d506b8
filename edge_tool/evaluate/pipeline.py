"""run_eval: reference outputs once, then drift, latency and (optionally) per-layer error for every artefact."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from edge_tool.errors import UsageError, collect_and_raise
from edge_tool.evaluate import metrics
from edge_tool.evaluate.artifacts import Artifact, describe, saved_model_size
from edge_tool.evaluate.config import ArtifactFormat, EvalConfig
from edge_tool.evaluate.data import EvalData, load_eval_data
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
    """Evaluate every artefact of ``config``; raises UsageError-family errors (exit 2) before measuring."""
    from edge_tool.evaluate.machine import machine_info  # noqa: PLC0415
    from edge_tool.evaluate.reference import ReferenceModel  # noqa: PLC0415
    from edge_tool.modelio import validate_saved_model_dir  # noqa: PLC0415

    _check_outputs(config)
    validate_saved_model_dir(config.reference)
    arts = _describe_all(config.artifacts)
    ref = ReferenceModel(config.reference)
    data = load_eval_data(config.data, ref.input_specs, seed=config.seed)
    if config.max_drop is not None and data.labels is None:
        raise UsageError(f"--max-drop needs labels, but --data {config.data} has none (add y to it).")
    ref_out = ref.predict(data.inputs)
    out_name = primary_output(ref_out)
    ref_task = metrics.task_metrics(ref_out[out_name], data.labels, config.top_k)
    sample = {k: v[:1] for k, v in data.inputs.items()}
    ref_lat = ref.latency(sample, config.warmup, config.effective_runs, config.time_budget_s)
    reference = ReferenceResult(str(config.reference), saved_model_size(config.reference), ref_task["accuracy"],
                                ref_task["top_k_accuracy"], ref_lat, "tensorflow (SavedModel, batch 1)", out_name)
    worst_layers_cache: list = []
    results, notes = [], []
    for art, label in zip(arts, _labels(arts)):
        if art.format is ArtifactFormat.TFLITE:
            result = _eval_tflite(art, label, config, data, ref_out, out_name, reference)
        else:
            result = _eval_tfjs(art, label, config, data, ref_out, out_name, reference)
        if config.per_layer:
            result = _with_per_layer(result, art, config, data, ref, worst_layers_cache)
        results.append(result)
    if config.per_layer:
        notes += _per_layer_notes(arts, _labels(arts))
    settings = {"threads": config.threads, "warmup": config.warmup, "runs": config.effective_runs,
                "time_budget_s": config.time_budget_s, "top_k": config.top_k, "max_drop": config.max_drop,
                "max_latency_ms": config.max_latency_ms}
    data_desc = {"path": str(config.data), "summary": data.summary, "samples": data.count,
                 "labels": data.labels is not None, "warnings": list(data.warnings), "source": data.details}
    return Report(reference, tuple(results), data_desc, machine_info(), settings, tuple(notes))


def _drift_fields(ref: np.ndarray, out: np.ndarray, labels, top_k: int, reference: ReferenceResult) -> dict:
    d = metrics.drift(ref, out)
    task = metrics.task_metrics(out, labels, top_k)
    drop = None if task["accuracy"] is None else reference.accuracy - task["accuracy"]
    return {"accuracy": task["accuracy"], "top_k_accuracy": task["top_k_accuracy"],
            "reference_accuracy": reference.accuracy, "accuracy_drop": drop, **d}


def _eval_tflite(art: Artifact, label: str, config: EvalConfig, data: EvalData, ref_out: dict, out_name: str,
                 reference: ReferenceResult) -> ArtifactResult:
    from edge_tool.evaluate.tflite_runner import TfliteModel  # noqa: PLC0415

    model = TfliteModel(art.model_file, threads=config.threads)
    feeds = model.prepare(data.inputs)
    raw = model.predict(feeds)
    binding = model.output_for(out_name, sorted(ref_out).index(out_name))
    out = model.dequantize(binding, raw[binding.index])
    fields = _drift_fields(ref_out[out_name], out, data.labels, config.top_k, reference)
    one = {idx: x[:1] for idx, x in feeds.items()}
    out_idx = [b.index for b in model.outputs]
    args = (art.model_file, one, out_idx, config.threads, config.warmup, config.effective_runs, config.time_budget_s)
    if config.latency_in_subprocess:
        lat, rss = measure_tflite_subprocess(*args)
    else:
        lat, rss = measure_tflite(*args), None
    return ArtifactResult(
        artifact=label, format="tflite", quant=art.quant, size_bytes=art.size_bytes,
        size_ratio=art.size_bytes / reference.size_bytes, latency=lat, peak_rss_mb=rss, threads=config.threads,
        runtime=model.runtime, **fields,
    )


def _eval_tfjs(art: Artifact, label: str, config: EvalConfig, data: EvalData, ref_out: dict, out_name: str,
               reference: ReferenceResult) -> ArtifactResult:
    from edge_tool.evaluate.tfjs_runner import run_tfjs  # noqa: PLC0415

    run = run_tfjs(art.model_file, data.inputs, config.warmup, config.effective_runs, config.time_budget_s)
    name = out_name if out_name in run.outputs else sorted(run.outputs)[sorted(ref_out).index(out_name)]
    fields = _drift_fields(ref_out[out_name], run.outputs[name], data.labels, config.top_k, reference)
    lat = summarize(np.asarray(run.latency_ms) * 1e6, None) if run.latency_ms else None
    return ArtifactResult(
        artifact=label, format="tfjs", quant=art.quant, size_bytes=art.size_bytes,
        size_ratio=art.size_bytes / reference.size_bytes, latency=lat, peak_rss_mb=None, threads=1,
        runtime=run.version, latency_note="tfjs cpu backend in Node (single-threaded JS), not a browser figure",
        **fields,
    )


def _per_layer_eligible(art: Artifact) -> bool:
    return art.format is ArtifactFormat.TFLITE and art.quant == "int8"


def _with_per_layer(result: ArtifactResult, art: Artifact, config: EvalConfig, data: EvalData, ref,
                    cache: list) -> ArtifactResult:
    from dataclasses import replace  # noqa: PLC0415

    from edge_tool.evaluate.per_layer import worst_layers  # noqa: PLC0415

    if not _per_layer_eligible(art):
        return result
    if not cache:
        order = [s.name for s in ref.input_specs]
        cache.append(worst_layers(config.reference, data.inputs, order, config.per_layer_top))
    return replace(result, per_layer=cache[0])


def _per_layer_notes(arts: list[Artifact], labels: list[str]) -> list[str]:
    notes = []
    if any(_per_layer_eligible(a) for a in arts):
        notes.append("Per-layer errors: tf.lite.experimental.QuantizationDebugger on an int8 model rebuilt from the "
                     "reference with the eval data as representative dataset (the debugger needs the float model); "
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
