"""run_eval: one streaming pass (reference + every artefact per batch, each artefact in its own process, running
metrics), then latency and (optionally) per-layer error for every artefact; failed artefacts become rows."""

from __future__ import annotations

import shutil
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path

from edge_tool.errors import UsageError, collect_and_raise
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.data import EvalStream
from edge_tool.evaluate.inputs import resolve_eval_inputs
from edge_tool.evaluate.lm_eval import is_lm_reference, run_lm_eval
from edge_tool.evaluate.machine import machine_info
from edge_tool.evaluate.outputs import check_outputs
from edge_tool.evaluate.per_layer_step import per_layer_eligible, per_layer_notes, with_per_layer
from edge_tool.evaluate.report import Report
from edge_tool.evaluate.rows import ReferenceResult
from edge_tool.evaluate.runners import NONE_FIELDS
from edge_tool.evaluate.runtimes import check_runtime, open_board_runners, open_runner, runtime_for
from edge_tool.evaluate.stage_clock import StageClock
from edge_tool.evaluate.stream import stream
from edge_tool.evaluate.task_pass import TaskMeasure, TaskSettings
from edge_tool.evaluate.tflite_reference import (
    is_tflite_reference,
    open_reference,
    reference_runtime,
    reference_size,
    validate_reference,
)
from edge_tool.litert.isolated import scratch_dir
from edge_tool.models.precision import reference_precision_note
from edge_tool.models.readers import Artifact, ArtifactFormat, describe
from edge_tool.models.signature_choice import numeric_signature_way_out, takes_strings
from edge_tool.tflite_converter.per_layer import MAX_DEBUG_SAMPLES
from edge_tool.trust.guard import require_no_side_effects

__all__ = ["run_eval", "skip_tfjs_without_node"]


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
    tfjs = [a for a in arts if a.format is ArtifactFormat.TFJS]
    if not tfjs or len(tfjs) == len(arts) or shutil.which("node"):
        return arts, []
    note = (
        f"Skipped {', '.join(a.label for a in tfjs)}: evaluating a TFJS model runs tfjs in Node.js (node on PATH, "
        ">= 18), which was not found; install Node.js to get these rows."
    )
    return [a for a in arts if a.format is not ArtifactFormat.TFJS], [note]


def _labels(arts: list[Artifact]) -> list[str]:
    counts = Counter(a.label for a in arts)
    return [a.label if counts[a.label] == 1 else str(a.given) for a in arts]


def run_eval(config: EvalConfig) -> Report:
    """Evaluate every artefact of ``config``; raises UsageError-family errors (exit 2) before measuring.

    Every artefact runs in a process of its own (a LiteRT worker per .tflite, a Node session per TFJS model),
    started first so that their start-up overlaps TensorFlow's. One streaming pass over the data: each batch is
    sent to every artefact, then the reference runs it while they do, then their outputs are folded into running
    metric totals, so memory is O(batch) whatever the data size. An artefact whose runtime refuses it or
    crashes becomes a row with ``failed`` set; the others go on. Latency is measured afterwards, one model at a
    time on a quiet machine: batch 1 on the first sample, each .tflite in a fresh process.
    """
    if config.task == "lm" or config.text is not None or (config.task is None and is_lm_reference(config.reference)):
        return run_lm_eval(config)
    if config.data is None:
        raise UsageError("eval needs --data (the eval samples; --task lm takes --text instead).")
    clock = StageClock()
    check_runtime(config.runtime)
    check_outputs(config)
    validate_reference(config.reference)
    arts, notes = skip_tfjs_without_node(_describe_all(config.artifacts))
    for path in (config.reference, *(a.model_file for a in arts if a.format is ArtifactFormat.TFLITE)):
        require_no_side_effects(
            path, config.trust_model_code, "edgetool eval (it runs the reference and each artefact)", config.signature
        )
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(scratch_dir("edgetool-eval-")))
        runners = []
        litert_workers = sum(runtime_for(a.format, config.runtime).shares_cores for a in arts)
        threads = config.accuracy_threads(litert_workers)
        for slot, art in enumerate(arts):
            runners.append(open_runner(art, config, scratch, slot, threads))
            # an error or a stop signal unwinding: end the child processes at once instead of asking them
            stack.push(lambda exc_type, *_, r=runners[-1]: r.close(abort=exc_type is not None))
        labels = _labels(arts)
        for runner, label in open_board_runners(arts, labels, config, stack):  # --device rows: same pass
            runners.append(runner)
            labels.append(label)
        pass_ref_threads = config.reference_threads(litert_workers)
        ref = open_reference(config.reference, pass_ref_threads, config.trust_model_code, config.signature)
        keep = MAX_DEBUG_SAMPLES if config.per_layer and any(per_layer_eligible(a) for a in arts) else 0
        with _numeric_signature_hint(ref):
            fed = resolve_eval_inputs(ref, arts, config.data, config.labels, config.contract, config.seed)
        data = EvalStream(
            config.data,
            ref.input_specs,
            seed=config.seed,
            batch_size=config.batch_size,
            keep_first=keep,
            images=fed.resolution.contracts,
            class_map=fed.class_map,
        )
        notes += [f"Input contract: {line}" for line in fed.resolution.lines] + list(fed.resolution.warnings)
        notes += [f"Labels: {data.label_note}."] if data.label_note else []
        notes += (
            [why]
            if not is_tflite_reference(config.reference)
            and (why := reference_precision_note(config.reference, config.signature))
            else []
        )
        settings = _task_settings(config, data)
        if config.max_drop is not None and data.labels is None and not settings.reference_only(ref):
            raise UsageError(f"--max-drop needs labels, but --data {config.data} has none (add y to it).")
        clock.mark("start (TensorFlow import, reference load, workers started)")
        with _numeric_signature_hint(ref):
            data_pass = stream(ref, data, runners, settings, scratch)
        measure = data_pass.measure
        _check_budgets_measurable(config, measure)
        for r in runners:
            r.end_pass()
        clock.mark("accuracy pass")
        ref_metrics = measure.reference_metrics(data_pass.ref_scores)
        ref_lat = ref.latency(
            data_pass.sample, config.warmup, config.effective_runs, config.time_budget_s, config.threads
        )
        clock.mark("reference latency")
        classifying = measure.task.name == "classification"
        reference = ReferenceResult(
            str(config.reference),
            reference_size(config.reference),
            ref_metrics["accuracy"] if classifying else None,
            ref_metrics["top_k"] if classifying else None,
            ref_lat,
            reference_runtime(config.reference),
            data_pass.out_name,
            ref_metrics,
        )
        spreads = {i: {"spread": s.record(labels)} for i, s in data_pass.spreads.items() if not runners[i].failed}
        results = [
            r.result(label, config, reference, {**_fields(r, acc, measure, ref_metrics), **spreads.get(i, {})})
            for i, (r, acc, label) in enumerate(zip(runners, data_pass.accs, labels))
        ]
        clock.mark("artefact latency")
    if config.per_layer:
        results = with_per_layer(results, arts, config, data, ref)
        notes += per_layer_notes(arts, _labels(arts))
        clock.mark("per-layer")
    settings = {
        "threads": config.threads,
        "accuracy_pass_threads": threads,
        "reference_pass_threads": pass_ref_threads,
        "reference_latency_threads": ref.threads,
        "warmup": config.warmup,
        "runs": config.effective_runs,
        "time_budget_s": config.time_budget_s,
        "top_k": config.top_k,
        "max_drop": config.max_drop,
        "max_latency_ms": config.max_latency_ms,
        "batch_size": config.batch_size,
        "threshold": config.threshold,
        "keypoint_order": config.keypoint_order,
        "max_error": config.max_error,
    }
    data_desc = {
        "path": str(config.data),
        "summary": data.summary,
        "samples": data.consumed,
        "labels": data.labels is not None,
        "warnings": list(data.warnings),
        "source": data.details(),
        "input_contract": fed.resolution.to_list(),
        "label_mapping": data.label_note or None,
    }
    notes += _task_notes(measure)
    clock.report()
    return Report(
        reference,
        tuple(results),
        data_desc,
        machine_info(),
        settings,
        tuple(notes),
        clock.stages,
        measure.choice.to_dict(measure.task),
    )


def _task_settings(config: EvalConfig, data: EvalStream) -> TaskSettings:
    names = tuple(data.details().get("class_names") or ()) if data.labels is not None else ()
    return TaskSettings(
        config.task, config.top_k, config.threshold, config.reference, names or None, config.keypoint_order
    )


def _check_budgets_measurable(config: EvalConfig, measure: TaskMeasure) -> None:
    """--max-drop needs the task's main metric: labels (except for tasks measured against the reference)."""
    task = measure.task
    if config.max_drop is not None and not measure.scored:
        raise UsageError(
            f"--max-drop needs labels: it gates the {task.name} task's {task.main_metric}, but "
            f"--data {config.data} has none (add y to it)."
        )


def _task_notes(measure: TaskMeasure) -> list[str]:
    choice, task = measure.choice, measure.task
    how = "given by --task" if choice.overridden else ("ASSUMED" if choice.assumed else "inferred")
    notes = [
        f"Task: {task.name} ({how}: {choice.reason}); main metric {task.main_metric} "
        f"({'higher' if task.higher_is_better else 'lower'} is better), the one --max-drop gates."
    ]
    if choice.assumed:
        notes.append("The task was assumed, not read off the model or the labels: if it is wrong, give --task.")
    if measure.data_labelled and not task.uses_labels():
        notes.append(
            f"The data's labels (y) are not used by the {task.name} task: it is measured against the "
            "reference's outputs."
        )
    return notes


def _fields(runner, acc, measure: TaskMeasure, ref_metrics: dict) -> dict:
    """The row's task, accuracy and drift figures; None for an artefact that failed during the pass."""
    if runner.failed:
        ref_acc = ref_metrics.get("accuracy") if measure.task.name == "classification" else None
        return {**NONE_FIELDS, "reference_accuracy": ref_acc}
    return measure.row_fields(acc, ref_metrics)


@contextmanager
def _numeric_signature_hint(ref):
    """Data refused for a reference signature that takes strings (image bytes): the refusal names the signatures of
    the SavedModel taking numeric input and the --signature picking one."""
    try:
        yield
    except UsageError as exc:
        hint = numeric_signature_way_out(ref.path, ref.signature.key) if takes_strings(ref.signature) else ""
        if not hint:
            raise
        raise UsageError(f"{exc}{hint}") from None
