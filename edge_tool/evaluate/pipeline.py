"""run_eval: one streaming pass (reference + every artefact per batch, each artefact in its own process, running
metrics), then latency and (optionally) per-layer error for every artefact; failed artefacts become rows."""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.types import show_shape
from edge_tool.errors import DataError, ModelError, UsageError, collect_and_raise
from edge_tool.evaluate import metrics
from edge_tool.evaluate.artifacts import Artifact, describe, saved_model_size
from edge_tool.evaluate.config import ArtifactFormat, EvalConfig
from edge_tool.evaluate.data import EvalStream
from edge_tool.evaluate.report import ArtifactResult, ReferenceResult, Report
from edge_tool.fsutil import atomic_file, check_output_file


def _check_outputs(config: EvalConfig) -> None:
    problems = []
    for path in config.report_paths.values():
        try:
            check_output_file(path, config.force, config.inputs)
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

    Every artefact runs in a process of its own (a LiteRT worker per .tflite, a Node session per TFJS model),
    started first so that their start-up overlaps TensorFlow's. One streaming pass over the data: each batch is
    sent to every artefact, then the reference runs it while they do, then their outputs are folded into running
    metric totals, so memory is O(batch) whatever the data size. An artefact whose runtime refuses it or
    crashes becomes a row with ``failed`` set; the others go on. Latency is measured afterwards, one model at a
    time on a quiet machine: batch 1 on the first sample, each .tflite in a fresh process.
    """
    from edge_tool.evaluate.isolated import scratch_dir  # noqa: PLC0415
    from edge_tool.evaluate.machine import machine_info  # noqa: PLC0415
    from edge_tool.evaluate.per_layer import MAX_DEBUG_SAMPLES  # noqa: PLC0415
    from edge_tool.evaluate.reference import ReferenceModel  # noqa: PLC0415
    from edge_tool.modelio import validate_saved_model_dir  # noqa: PLC0415

    clock = _Stages()
    _check_outputs(config)
    validate_saved_model_dir(config.reference)
    arts, notes = skip_tfjs_without_node(_describe_all(config.artifacts))
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(scratch_dir("edgetool-eval-")))
        runners = []
        threads = config.accuracy_threads(sum(a.format is ArtifactFormat.TFLITE for a in arts))
        for slot, art in enumerate(arts):
            runners.append(_open_runner(art, config, scratch, slot, threads))
            # an error or a stop signal unwinding: end the child processes at once instead of asking them
            stack.push(lambda exc_type, *_, r=runners[-1]: r.close(abort=exc_type is not None))
        ref = ReferenceModel(config.reference)
        keep = MAX_DEBUG_SAMPLES if config.per_layer and any(_per_layer_eligible(a) for a in arts) else 0
        data = EvalStream(config.data, ref.input_specs, seed=config.seed, batch_size=config.batch_size,
                          keep_first=keep)
        if config.max_drop is not None and data.labels is None:
            raise UsageError(f"--max-drop needs labels, but --data {config.data} has none (add y to it).")
        clock.mark("start (TensorFlow import, reference load, workers started)")
        data_pass = _stream(ref, data, runners, config.top_k, scratch)
        for r in runners:
            r.end_pass()
        clock.mark("accuracy pass")
        ref_task = data_pass.ref_task.result()
        ref_lat = ref.latency(data_pass.sample, config.warmup, config.effective_runs, config.time_budget_s)
        clock.mark("reference latency")
        reference = ReferenceResult(str(config.reference), saved_model_size(config.reference), ref_task["accuracy"],
                                    ref_task["top_k_accuracy"], ref_lat, "tensorflow (SavedModel, batch 1)",
                                    data_pass.out_name)
        results = [r.result(label, config, reference, _fields(r, acc, reference))
                   for r, acc, label in zip(runners, data_pass.accs, _labels(arts))]
        clock.mark("artefact latency")
    if config.per_layer:
        results = _with_per_layer(results, arts, config, data, ref)
        notes += _per_layer_notes(arts, _labels(arts))
        clock.mark("per-layer")
    settings = {"threads": config.threads, "accuracy_pass_threads": threads,
                "warmup": config.warmup, "runs": config.effective_runs, "time_budget_s": config.time_budget_s,
                "top_k": config.top_k, "max_drop": config.max_drop, "max_latency_ms": config.max_latency_ms,
                "batch_size": config.batch_size}
    data_desc = {"path": str(config.data), "summary": data.summary, "samples": data.consumed,
                 "labels": data.labels is not None, "warnings": list(data.warnings), "source": data.details()}
    return Report(reference, tuple(results), data_desc, machine_info(), settings, tuple(notes), clock.stages)


class _Stages:
    """Wall seconds per stage of run_eval (the report's ``timings_s``)."""

    def __init__(self):
        import time  # noqa: PLC0415

        self._now = time.perf_counter
        self._t = self._now()
        self.stages: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        """Close ``stage`` at now."""
        t = self._now()
        self.stages[stage] = round(t - self._t, 3)
        self._t = t


@dataclass
class _Pass:
    """What the streaming pass leaves: the primary output's name, the first sample, running metrics."""

    out_name: str
    sample: dict
    ref_task: metrics.TaskAccumulator
    accs: list


def _stream(ref, data: EvalStream, runners: list, top_k: int, scratch: Path) -> _Pass:
    """Each batch: to every artefact's process, through the reference meanwhile, then every output folded in.

    The first batch goes through the reference first (its outputs name the primary output the artefacts send
    back); from the second on, the reference and every artefact work on the batch at the same time.
    """
    from edge_tool.evaluate.runners import BatchFiles  # noqa: PLC0415

    files = BatchFiles(scratch)
    accs = [metrics.DriftAccumulator(top_k) for _ in runners]
    state: _Pass | None = None
    ref_names: list[str] = []
    for inputs, labels in data.batches():
        written = files.write(inputs) if any(r.reads_files and not r.failed for r in runners) else {}
        if state is None:
            ref_out = ref.predict(inputs)
            state = _Pass(primary_output(ref_out), {k: v[:1].copy() for k, v in inputs.items()},
                          metrics.TaskAccumulator(top_k), accs)
            ref_names = sorted(ref_out)
            check_labels(data.labels, ref_out[state.out_name], state.out_name, data.path)
            for r in runners:
                r.submit(written, inputs, state.out_name, ref_names)
        else:
            for r in runners:
                r.submit(written, inputs, state.out_name, ref_names)
            ref_out = ref.predict(inputs)
        ref_y = ref_out[state.out_name]
        state.ref_task.update(ref_y, labels)
        for runner, acc in zip(runners, accs):
            out = runner.collect()
            if out is not None:
                _check_output_shape(runner.art, out, ref_y, state.out_name, ref)
                acc.update(ref_y, out, labels)
    if state is None:
        raise DataError(f"--data {data.path} yielded no samples.")
    return state


def check_labels(labels: np.ndarray | None, ref_y: np.ndarray, out_name: str, data_path: Path) -> None:
    """DataError unless every label is a class index of the reference's scored output (0 .. classes-1).

    Labels outside that range would score 0 % silently (and let a --max-drop gate pass on a broken model).
    """
    if labels is None or not len(labels):
        return
    classes = metrics.num_classes(ref_y)
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= classes:
        outside = int(np.count_nonzero((labels < 0) | (labels >= classes)))
        raise DataError(f"--data {data_path}: labels range {lo}..{hi} ({outside} of {len(labels)} outside 0.."
                        f"{classes - 1}), but the reference's output {out_name!r} has {classes} class"
                        f"{'es' if classes != 1 else ''} per sample; labels must be class indices 0..{classes - 1}.")


def _check_output_shape(art: Artifact, out: np.ndarray, ref_y: np.ndarray, out_name: str, ref) -> None:
    if out.shape[1:] != ref_y.shape[1:]:
        raise ModelError(f"{art.given} gives output {out_name!r} of shape {show_shape((None, *out.shape[1:]))}, but "
                         f"the reference {ref.path} gives {show_shape((None, *ref_y.shape[1:]))} (e.g. a different "
                         "number of classes): it was not converted from this reference model.")


def _fields(runner, acc: metrics.DriftAccumulator, reference: ReferenceResult) -> dict:
    """The row's accuracy and drift figures; all None for an artefact that failed during the pass."""
    from edge_tool.evaluate.runners import NONE_FIELDS  # noqa: PLC0415

    if runner.failed:
        return {**NONE_FIELDS, "reference_accuracy": reference.accuracy}
    task = acc.task.result()
    drop = None if task["accuracy"] is None else reference.accuracy - task["accuracy"]
    return {"accuracy": task["accuracy"], "top_k_accuracy": task["top_k_accuracy"],
            "reference_accuracy": reference.accuracy, "accuracy_drop": drop, **acc.drift()}


def _open_runner(art: Artifact, config: EvalConfig, scratch: Path, slot: int, threads: int):
    from edge_tool.evaluate.runners import TfjsRunner, TfliteRunner  # noqa: PLC0415

    if art.format is ArtifactFormat.TFLITE and config.runtime == "tflm":
        from edge_tool.evaluate.tflm_runner import TflmRunner  # noqa: PLC0415

        return TflmRunner(art, config, scratch, slot)

    cls = TfliteRunner if art.format is ArtifactFormat.TFLITE else TfjsRunner
    return cls(art, config, scratch, slot, threads)


def _per_layer_eligible(art: Artifact) -> bool:
    return art.format is ArtifactFormat.TFLITE and art.quant == "int8"


def failures(report: Report) -> list[tuple[str, str]]:
    """(artifact, message) for every artefact that could not be run."""
    return [(r.artifact, f"{r.artifact}: {r.failed}") for r in report.results if r.failed]


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
    return lines + _micro_violations(report, config)


def _micro_violations(report: Report, config: EvalConfig) -> list[tuple[str, str]]:
    """--max-arena-kb / --max-flash-kb against the TFLM rows."""
    lines = []
    for r in report.results:
        if r.arena is None:
            continue
        for flag, limit, value, what in (("--max-arena-kb", config.max_arena_kb, r.arena["minimum_bytes"], "tensor arena"),
                                         ("--max-flash-kb", config.max_flash_kb, r.flash_bytes, "flash")):
            if limit is not None and value / 1024 > limit:
                lines.append((r.artifact, f"{r.artifact}: {what} {value / 1024:.1f} KiB exceeds {flag} {limit:g} "
                              f"by {value / 1024 - limit:.1f} KiB"))
    return lines


def write_reports(report: Report, config: EvalConfig, failing: set[str]) -> list[Path]:
    """Write the --json / --markdown / --html files asked for (atomically); return their paths."""
    from edge_tool.evaluate.html_report import render  # noqa: PLC0415

    renderers = {"json": report.to_json, "markdown": report.to_markdown, "html": lambda: render(report, failing)}
    written = []
    for kind, path in config.report_paths.items():
        text = renderers[kind]()
        with atomic_file(path, config.force, config.inputs) as tmp:
            tmp.write_text(text, encoding="utf-8")
        written.append(path)
    return written
