"""``auto``'s orchestration: convert the candidates, measure them with ``edgetool eval``'s pipeline, search
selective int8 when full int8 misses the budget, choose (policy), and move everything into OUTDIR atomically."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from edge_tool.auto.config import INTEGER_ONLY, SELECTIVE, AutoConfig
from edge_tool.auto.policy import choose, reason
from edge_tool.auto.render import short_layer, to_markdown
from edge_tool.auto.result import FILE, AutoResult, Candidate
from edge_tool.contract.options import ContractOptions
from edge_tool.convert.api import convert
from edge_tool.convert.inputs import prepare_inputs
from edge_tool.convert.metadata_step import for_mode
from edge_tool.convert.selective import SelectiveInt8
from edge_tool.convert.source import is_keras_file, prepare_source
from edge_tool.convert.tflite_source import is_tflite_source
from edge_tool.core.env import import_tf, quiet_native_stderr
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.core.steps import step
from edge_tool.device.facts import describe
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.evaluate import EvalConfig, run_eval
from edge_tool.evaluate.budgets import drop_within
from edge_tool.metadata.writer import embed_metadata
from edge_tool.parsers.tflite_model import integer_only_problem
from edge_tool.tflite_converter.run import new_converter


def _eval_config(config: AutoConfig, paths: list[Path]):
    c = config.convert
    return EvalConfig(
        artifacts=tuple(paths),
        reference=config.reference_model,
        data=config.eval_data,
        threads=config.threads,
        max_drop=config.max_drop,
        seed=c.seed,
        labels=c.labels,
        contract=ContractOptions(c.input_range, c.input_mean, c.input_std),
        trust_model_code=c.trust_model_code,
        devices=(config.device_url,) if config.device_url else (),
        signature=c.signature,  # the reference runs the signature the candidates were converted from
    )


def measure(
    config: AutoConfig, named: list[tuple[str, Path, tuple[str, ...] | None]]
) -> tuple[list[Candidate], float | None, dict | None]:
    """Run ``edgetool eval``'s pipeline on the files; one Candidate per (name, path, float_layers), the reference's
    main metric and eval's task (the budget is on that task's main metric: accuracy, f1_macro, r2, miou, ...).

    When the run fails, each file is measured alone so that only the ones that fail become failed rows
    ("evaluation failed: ..."); if every file fails the same way (bad eval data, say) that error is raised.
    """
    try:
        return _measure_together(config, named)
    except EdgeToolError as exc:
        if len(named) == 1:
            return [Candidate.failure(named[0][0], f"evaluation failed: {exc}", named[0][1])], None, None
        first = exc
    out, ref_acc, task, errors = [], None, None, []
    for item in named:
        try:
            (cand,), ref_acc, task = _measure_together(config, [item])
        except EdgeToolError as exc:
            errors.append(str(exc))
            cand = Candidate.failure(item[0], f"evaluation failed: {exc}", item[1])
        out.append(cand)
    if len(errors) == len(named):
        raise first
    return out, ref_acc, task


def _measure_together(config: AutoConfig, named: list) -> tuple[list[Candidate], float | None, dict | None]:
    report = run_eval(_eval_config(config, [p for _, p, _ in named]))
    main = (report.task or {}).get("main_metric", "accuracy")
    out = []
    # with --device the candidates are what the board measured (its rows follow the host rows, in the same order)
    rows = report.results[len(named) :] if config.device else report.results
    for (name, path, layers), r in zip(named, rows):
        if r.failed:  # eval could not run the artefact (e.g. it crashed the runtime): its own failed row
            out.append(Candidate.failure(name, f"evaluation failed: {r.failed}", path))
            continue
        value, drop = (r.metrics or {}).get(main, r.accuracy), r.metric_drop
        meets = drop is not None and drop_within(drop, config.max_drop)
        out.append(
            Candidate(
                name,
                r.quant,
                path,
                r.size_bytes,
                value,
                drop,
                r.latency.p50 if r.latency else None,
                meets,
                float_layers=layers,
            )
        )
    task = dict(report.task or {}, device=rows[0].device) if config.device else report.task
    return out, (report.reference.metrics or {}).get(main, report.reference.accuracy), task


def _convert_config(config: AutoConfig, out: Path):
    """The candidates' ConvertConfig, writing into ``out`` (a work directory) instead of OUTDIR."""
    return replace(config.convert, output_dir=out, force=False)


def _selective_search(config: AutoConfig, work: Path, stem: str) -> tuple[Candidate | None, list[str]]:
    """Keep the 1, 2, … worst layers (by rmse/scale) in float until the budget is met or the cap is reached."""
    tf = import_tf()
    source = prepare_source(
        config.model, work, config.convert.batch, config.convert.trust_model_code, config.convert.signature
    )
    inputs = prepare_inputs(tf, _convert_config(config, work / "unused"), source)
    ds, spec = inputs.dataset, inputs.metadata  # as every convert candidate has
    with step("rank int8 layers (QuantizationDebugger)"):
        sel = SelectiveInt8(
            tf,
            new_converter(
                source.saved_model,
                signature=source.signature.key,
                allow_select_tf_ops=config.convert.allow_select_tf_ops,
            ),
            ds.inputs,
            str(config.model),
        )
    layers = sel.candidates(config.max_float_layers)
    notes = [
        "int8 layers by rmse/scale (worst first): "
        + ", ".join(f"{short_layer(e.tensor_name)} {e.rmse_over_scale:.2f}" for e in sel.ranking[:5])
        + "."
    ]
    best = None
    for k in range(1, len(layers) + 1):
        names = tuple(e.tensor_name for e in layers[:k])
        path = work / f"{stem}_{SELECTIVE.replace('-', '_')}.tflite"
        with step(f"selective int8 with {k} float layer(s)") as rec:
            data = sel.build(list(names))
            path.write_bytes(data if spec is None else embed_metadata(data, for_mode(spec, SELECTIVE, source.flavor)))
            rec.outputs.append(path)
        (best,), _, _ = measure(config, [(SELECTIVE, path, names)])
        if best.meets_budget:
            break
    if not layers:
        notes.append(
            "selective int8 skipped: no int8 layer quantizes worse than ideal rounding (or --max-float-layers is 0)."
        )
    return best, notes


def run_auto(config: AutoConfig) -> AutoResult:
    """Build, measure, choose and write OUTDIR; ``result.chosen`` is None when nothing is in budget.

    A candidate that fails to convert or to be measured becomes a failed row; the choice is made among the
    others. ConversionError when no candidate converts at all.
    """
    check_output_dir(config.output_dir, config.convert.force, config.inputs)

    with tempfile.TemporaryDirectory(prefix="edgetool-auto-") as tmp:
        work = Path(tmp)
        if is_keras_file(config.model):  # exported once, the way convert does, and measured against from then on
            (work / "reference").mkdir()
            ref = prepare_source(
                config.model, work / "reference", trust_model_code=config.convert.trust_model_code, as_trained=True
            )
            config = replace(config, reference=ref.saved_model)
        built = convert(_convert_config(config, work / "candidates"))
        if not built.artifacts:
            reasons = "\n".join(f"- {mode}: {why}" for mode, why in built.failures.items())
            raise ConversionError(f"--quant auto: no candidate converted for {config.model}:\n{reasons}")
        named, excluded = _screen(config, [(a.quant, built.path_of(a), None) for a in built.artifacts])
        measured, ref_acc, task = [], None, None
        if named:
            with quiet_native_stderr(), step("measure candidates (edgetool eval)"):
                measured, ref_acc, task = measure(config, named)
        by_name = {c.name: c for c in [*measured, *excluded]}
        by_name.update({m: Candidate.failure(m, why) for m, why in built.failures.items()})
        cands = [by_name[m] for m in config.modes if m in by_name]
        notes = _task_notes(task) + _add_selective(
            config, work, cands, Path(built.artifacts[0].path).stem.rsplit("_", 1)[0]
        )
        best = choose(cands, config.objective)
        cands = [replace(c, chosen=c is best) for c in cands]
        device = (task or {}).pop("device", None)
        where = describe(device) if device else "this host"
        why = reason(cands, config.objective, config.require, where)
        result = AutoResult(config, tuple(cands), ref_acc, tuple(notes), task, why, device)
        return _write(result, work)


def _task_notes(task: dict | None) -> list[str]:
    """What the budget is on: eval's task and its main metric."""
    if not task:
        return []
    how = "--task" if task.get("given") else "assumed" if task.get("assumed") else "inferred"
    return [f"Task: {task['name']} ({how}: {task['reason']}); the budget --max-drop is on {task['main_metric']}."]


def _screen(config: AutoConfig, named: list) -> tuple[list, list[Candidate]]:
    """(the files to measure, the candidates ``--require`` rules out, as failed rows naming why)."""
    if config.require != INTEGER_ONLY:
        return named, []
    keep, out = [], []
    for name, path, layers in named:
        why = integer_only_problem(path.read_bytes())
        if why is None:
            keep.append((name, path, layers))
        else:
            out.append(Candidate.failure(name, f"not integer-only (--require {INTEGER_ONLY}): it {why}", path))
    return keep, out


def _add_selective(config: AutoConfig, work: Path, cands: list[Candidate], stem: str) -> list[str]:
    """When full int8 converted but misses the budget, append the selective-int8 candidate (or its failure)."""
    int8 = next((c for c in cands if c.name == "int8"), None)
    if int8 is None or int8.meets_budget or config.max_float_layers == 0:
        return []
    if config.require == INTEGER_ONLY:
        return [f"selective int8 skipped: it keeps layers in float, which --require {INTEGER_ONLY} rules out."]
    if int8.failed:
        return ["selective int8 skipped: full int8 did not convert or run."]
    if is_tflite_source(config.model):
        return [
            "selective int8 skipped: it re-converts the SavedModel with layers kept in float; the source is a .tflite."
        ]
    try:
        with quiet_native_stderr():
            selective, notes = _selective_search(config, work, stem)
    except EdgeToolError as exc:
        cands.append(Candidate.failure(SELECTIVE, str(exc)))
        return []
    if selective is not None:
        shutil.move(selective.path, work / "candidates" / selective.path.name)
        cands.append(replace(selective, path=work / "candidates" / selective.path.name))
    return notes


def _write(result: AutoResult, work: Path) -> AutoResult:
    """Move the files into OUTDIR atomically: chosen at the top, the rest under candidates/, decision files."""
    config = result.config
    final = []
    with atomic_dir(config.output_dir, config.convert.force, config.inputs) as out:
        shutil.copytree(work / "candidates", out / "candidates")
        for c in result.candidates:
            if c.path is None:
                final.append(c)
                continue
            rel = Path("candidates") / c.path.name
            if c.chosen:
                (out / rel).rename(out / c.path.name)
                rel = Path(c.path.name)
            final.append(replace(c, path=config.output_dir / rel))
        result = replace(result, candidates=tuple(final))
        (out / FILE).write_text(json.dumps(result.decision.to_dict(), indent=2) + "\n")
        (out / "decision.md").write_text(to_markdown(result))
    return result
