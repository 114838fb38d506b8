"""How ``--quant qat`` builds (``convert.modes.qat`` registers it): fine-tune a QAT copy of the Keras model, convert it
and plain int8 PTQ, measure both, ship the more accurate one, and record the decision for the manifest."""

from edge_tool import calibration
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError
from edge_tool.litert.recipes import configure_full_int8
from edge_tool.qat.data import load_labelled
from edge_tool.qat.export import qat_to_tflite
from edge_tool.qat.pipeline import QatOptions, match_data, run_qat
from edge_tool.qat.select import decide, float_accuracy
from edge_tool.qat.source import check_qat_source
from edge_tool.tasks import get_task


def build(ctx) -> bytes:
    """Fine-tune a QAT copy of the Keras model, convert it and plain int8 PTQ, ship the more accurate one.

    Both are measured in LiteRT on ``--eval-data``, or on the held-out split of ``--train-data`` that also picked
    the best epoch; the decision (both accuracies, the reason) goes into the manifest record of the artefact.
    """
    cfg = ctx.config
    check_qat_source(ctx.keras_source())  # a model QAT cannot rewrite is the blocker, whatever the data holds
    specs = calibration.specs_from(ctx.source.signature.inputs)
    outputs = [o.name for o in ctx.source.signature.outputs]
    train = load_labelled(cfg.train_data, specs, outputs, cfg.seed, "--train-data")
    options = QatOptions(
        epochs=cfg.qat_epochs,
        strategy=cfg.strategy,
        replicas=cfg.replicas,
        seed=cfg.seed,
        trust_model_code=cfg.trust_model_code,
    )
    run = run_qat(ctx.keras_source(), *_keyed(train), options, progress=ctx.epoch_progress)
    if cfg.eval_data is not None:
        evaluation = load_labelled(cfg.eval_data, specs, outputs, cfg.seed, "--eval-data")
        held = match_data(run.float_model, *_keyed(evaluation), [h.name for h in run.heads], "--eval-data")
        where = f"--eval-data {cfg.eval_data}"
    else:
        held = run.held_out
        where = (
            f"held-out {round(options.held_out_fraction * 100)}% of --train-data (also used to pick the best "
            "epoch; pass --eval-data for an independent measurement)"
        )
    io_type = "float32" if ctx.io_dtype is None else cfg.io_type.value
    candidates, failures, fixed = {}, {}, {}
    by_name = _by_name(ctx, specs)
    heads = [h.name for h in run.heads]
    builds = {
        "qat": lambda c: qat_to_tflite(run.model, by_name, io_type, heads, batch=c.config.batch),
        "ptq_int8": lambda c: c.convert(lambda conv: configure_full_int8(c.tf, conv, by_name, c.io_dtype)),
    }
    for key, build in builds.items():
        try:
            candidates[key], note = _at_fixed_batch(ctx, "the QAT model" if key == "qat" else "int8 PTQ", build)
        except ConversionError as exc:
            failures[key] = str(exc)
            continue
        if note:
            fixed[key] = note
    data, decision = decide(
        candidates.get("qat"),
        candidates.get("ptq_int8"),
        failures,
        held,
        run.heads,
        float_accuracy(run.float_model, held, run.heads),
        where,
    )
    shipped = fixed.get("qat" if decision.shipped == "qat" else "ptq_int8")
    ctx.record_notes(
        "qat",
        {
            **decision.to_dict(),
            "scored_by": _scores(run.heads),
            **_training_notes(run.notes),
            **({"fixed_batch": shipped} if shipped else {}),
        },
    )
    _report(decision)
    return data


def _at_fixed_batch(ctx, what: str, build) -> tuple[bytes, dict | None]:
    """``build(ctx)``, retried at batch 1 when LiteRT refuses the free-batch file (``BatchRetry.inside``)."""
    if ctx.retry is None:
        return build(ctx), None
    return ctx.retry.inside(what, build)


def _keyed(data):
    """(x, y) of a Labelled: plain arrays for one input/output (names may differ from the Keras model's)."""
    x = next(iter(data.x.values())) if len(data.x) == 1 else data.x
    y = next(iter(data.y.values())) if len(data.y) == 1 else data.y
    return x, y


def _by_name(ctx, specs):
    """The representative dataset as dicts keyed by signature input name: both candidates are calibrated by
    name, never by position (the positional order of a multi-input signature is not the model's)."""
    names = [s.name for s in specs]

    def gen():
        for sample in ctx.representative_dataset():  # dicts already (calibration.Dataset); lists from older callers
            yield sample if isinstance(sample, dict) else dict(zip(names, sample))

    return gen


def _scores(heads) -> dict:
    """{output: "task: main metric"}: what the record's ``accuracy`` figures are (their mean over the outputs)."""
    return {h.name: f"{h.task}: {get_task(h.task).main_metric}" for h in heads}


def _training_notes(notes: dict) -> dict:
    keep = ("folded", "fold_dropped", "float_layers", "ranges_calibrated", "best_epoch", "history")
    return {"training": {k: notes[k] for k in keep if k in notes}}


def _report(decision) -> None:
    acc = decision.accuracy
    shown = ", ".join(f"{k} {v:.4f}" if v is not None else f"{k} failed" for k, v in acc.items())
    console.print(
        f"  qat vs int8 PTQ on {term(decision.held_out['source'])} ({decision.held_out['samples']} samples): {shown}"
    )
    if decision.shipped == "qat":
        console.print(f"  shipped: QAT ({term(decision.reason)})")
    else:
        console.print(
            f"[yellow]warning:[/] {term(decision.reason)}; the _qat.tflite file holds the plain int8 "
            'PTQ model (manifest.json: artifacts[].qat.shipped = "ptq-int8").'
        )
    if decision.note:
        console.print(f"[yellow]note:[/] {term(decision.note)}")
