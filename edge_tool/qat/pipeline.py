"""QAT: quantization-aware fine-tuning of a tf_keras model with tfmot, then full-integer int8 TFLite.

Pipeline (each step exists because the naive ``quantize_model`` route fails or loses accuracy on real models):

1. load the Keras-2 model (SavedModel dir, .h5, or tf_keras .keras; ``qat.source``); Keras-3 exports,
   subclassed models and recurrent layers are refused with the reason and the way out (``--quant int8``);
2. rebuild it from its own graph objects (nested models inlined), folding BatchNorm and input scaling into the
   neighbouring conv/dense only where exact, verified on sample data (``qat.folding``);
3. annotate every layer tfmot supports (TF-op layers stay float, calibrated at conversion), ``quantize_apply``,
   and start every fake-quant range at the calibration min/max (``qat.ranges``), not at [-6, 6];
4. fine-tune on targets mixing labels with the float model's probabilities, small cosine-decayed LR, keeping the
   best epoch (epoch 0 = calibrated ranges only) on a held-out split (``qat.finetune``);
5. convert with TFLITE_BUILTINS_INT8 + a representative dataset: the result is full-integer
   (``qat.export``).

``modes/qat.py`` then measures this against plain int8 PTQ on held-out data and ships the better one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge_tool.errors import ConversionError, DataError, UsageError, collect_and_raise
from edge_tool.qat.annotate import annotate_supported, refuse_unsupported
from edge_tool.qat.data import Labelled, from_arrays, split
from edge_tool.qat.enums import QatStrategy
from edge_tool.qat.finetune import Schedule, fine_tune, predict
from edge_tool.qat.folding import fold_model
from edge_tool.qat.heads import detect_heads, head_tasks
from edge_tool.qat.ranges import calibrate_ranges, tfmot_quantizer_types
from edge_tool.qat.source import import_stack, load_keras_for_qat
from edge_tool.tasks.embedding import unit_rows
from edge_tool.training.config import Strategy
from edge_tool.training.strategies import build_local_strategy

STRATEGIES = tuple(s.value for s in QatStrategy)
__all__ = ["QatOptions", "QatRun", "STRATEGIES", "build_qat_model", "match_data", "quantization_aware_model", "run_qat"]


@dataclass(frozen=True)
class QatOptions:
    """How to fine-tune: epochs, global batch, peak learning rate (cosine-decayed), strategy, seed, and how much
    the targets lean on the float model's own predictions (distillation) rather than the labels."""

    epochs: int = 3
    batch_size: int = 64
    learning_rate: float = 1e-4
    strategy: str = "default"
    replicas: int = 2
    seed: int = 0
    distillation: float = 0.5  # weight of the float model's own probabilities in the targets (rest: labels)
    patience: int = 2  # epochs without held-out improvement before stopping (the best epoch is kept)
    held_out_fraction: float = 0.2  # of the training data, kept aside to pick the best epoch
    range_samples: int = 256  # training samples the fake-quant ranges are calibrated on
    trust_model_code: bool = False  # --trust-model-code: load a Keras config that carries Python code

    def __post_init__(self) -> None:
        strategy = getattr(self.strategy, "value", self.strategy)
        object.__setattr__(self, "strategy", str(strategy))
        problems = []
        if self.epochs < 1:
            problems.append(f"QAT epochs must be >= 1, got {self.epochs}.")
        if self.batch_size < 1:
            problems.append(f"QAT batch size must be >= 1, got {self.batch_size}.")
        if not self.learning_rate > 0:
            problems.append(f"QAT learning rate must be > 0, got {self.learning_rate}.")
        if self.strategy not in STRATEGIES:
            problems.append(f"QAT strategy must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}.")
        if not 0.0 <= self.distillation <= 1.0:
            problems.append(f"QAT distillation weight must be in [0, 1], got {self.distillation}.")
        if self.replicas < 1:
            problems.append(f"QAT replicas must be >= 1, got {self.replicas}.")
        if self.patience < 1:
            problems.append(f"QAT patience must be >= 1, got {self.patience}.")
        if not 0.0 < self.held_out_fraction < 1.0:
            problems.append(f"QAT held-out fraction must be in (0, 1), got {self.held_out_fraction}.")
        if self.range_samples < 1:
            problems.append(f"QAT range samples must be >= 1, got {self.range_samples}.")
        collect_and_raise(problems, UsageError, "Invalid QAT options:")


def _input_problems(model, data: Labelled) -> list[str]:
    problems = []
    for name, tensor in zip(model.input_names, model.inputs):
        arr = data.x[name]
        want = tuple(tensor.shape[1:])
        if arr.ndim != len(want) + 1 or any(w is not None and w != g for w, g in zip(want, arr.shape[1:])):
            shown = ", ".join("?" if w is None else str(w) for w in want)
            problems.append(f"input {name!r} must have shape (n, {shown}); got {arr.shape}")
        elif not np.can_cast(arr.dtype, tensor.dtype.as_numpy_dtype, casting="same_kind"):
            problems.append(f"input {name!r} is {tensor.dtype.name}; got {arr.dtype} data")
    return problems


def match_data(model, x, y, output_names: list[str] | None = None, what: str = "Training data") -> Labelled:
    """Data as Labelled keyed by the Keras model's input names and its output names (or ``output_names``).

    ``x``/``y`` are arrays (single input/output) or dicts keyed by input/output names (or a Labelled as ``x``).
    Every input shape/dtype problem is reported at once (DataError); each output's task (eval's task logic:
    shape, final activation, labels) checks its labels (class ids, multi-hot rows, real targets, masks); inputs are
    cast to the model's dtypes.
    """
    if isinstance(x, Labelled):
        x, y = x.x, x.y
    names = output_names or list(model.output_names)
    data = from_arrays(x, y, list(model.input_names), names, what)
    shapes = [tuple(t.shape) for t in model.outputs]
    input_problems = _input_problems(model, data)
    xs = {}
    if not input_problems:
        xs = {n: data.x[n].astype(t.dtype.as_numpy_dtype) for n, t in zip(model.input_names, model.inputs)}
    unit = unit_norm_outputs(model, names, [xs[n][:64] for n in model.input_names]) if xs else frozenset()
    tasks, labels, problems = head_tasks(names, shapes, keras_activations(model, names), data.labels(names), what, unit)
    collect_and_raise(input_problems + problems, DataError, f"{what} does not fit the model for QAT:")
    return Labelled(xs, dict(zip(names, labels)), tuple(tasks))


def unit_norm_outputs(model, names: list[str], probe: list[np.ndarray], outputs=None) -> frozenset:
    """The outputs whose rows on ``probe`` have unit L2 norm (embeddings), as eval measures them."""
    outputs = predict(model, probe, len(names)) if outputs is None else outputs
    return frozenset(n for n, o in zip(names, outputs) if np.ndim(o) == 2 and unit_rows(o))


def keras_activations(model, names: list[str]) -> dict[str, str]:
    """{output name: the activation in its Keras layer's config} ("unknown" where the config does not say)."""
    found = {}
    for name in names:
        try:
            layer = model.get_layer(name)
        except ValueError:
            found[name] = "unknown"
            continue
        act = layer.get_config().get("activation")
        kind = type(layer).__name__
        found[name] = (
            act if isinstance(act, str) else {"Softmax": "softmax", "UnitNormalization": "l2norm"}.get(kind, "unknown")
        )
    return found


@dataclass(frozen=True, eq=False)
class QatRun:
    """A fine-tuned QAT model with what it was made from and how it went."""

    model: Any  # the tfmot QAT model (tf_keras)
    float_model: Any  # the folded float model (the distillation teacher and the float reference)
    heads: tuple  # qat.heads.Head per output
    held_out: Labelled  # the split of the training data the best epoch was picked on
    notes: dict  # folded, fold_dropped, float_layers, ranges_calibrated, history, best_epoch


def build_qat_model(keras, tfmot, source, samples: list[np.ndarray]):
    """Fold (verified on ``samples``), annotate and quantize_apply ``source``.

    Returns (qat model, folded float model, notes).
    """
    folded, folds, dropped = fold_model(keras, source, samples)
    annotated, skipped = annotate_supported(keras, tfmot, folded)
    try:
        with tfmot.quantization.keras.quantize_scope():
            qat = tfmot.quantization.keras.quantize_apply(annotated)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise ConversionError(
            f"tfmot could not make the model quantization-aware: {str(exc).splitlines()[0]} "
            "Use --quant int8 (post-training quantization) instead."
        ) from None
    _finalize_preprocessing(keras, qat)
    return qat, folded, {"folded": folds, "fold_dropped": dropped, "float_layers": skipped}


def _finalize_preprocessing(keras, model) -> None:
    """Recompute adapted preprocessing state (Normalization's mean/variance) from the copied weights.

    tfmot rebuilds the model and then sets its weights; a tf_keras Normalization computes the tensors it
    uses from its ``adapt_mean``/``adapt_variance`` weights only in ``build``/``finalize_state``, so without this
    the QAT copy would normalize with mean 0 and variance 1 (an identity), silently.
    """
    base = keras.layers.experimental.preprocessing.PreprocessingLayer
    for layer in model.layers:
        inner = getattr(layer, "layer", layer)
        if isinstance(inner, base) and inner.built and getattr(inner, "adapt_mean", None) is not None:
            inner.finalize_state()


def _batches(arrays: list[np.ndarray], size: int):
    for i in range(0, len(arrays[0]), size):
        yield [a[i : i + size] for a in arrays]


def run_qat(
    model_path: Path, x_train, y_train=None, options: QatOptions = QatOptions(), progress: Callable | None = None
) -> QatRun:
    """Load ``model_path``, make it quantization-aware, calibrate its ranges and fine-tune it.

    ``x_train``/``y_train``: arrays for a single-input/-output model, or dicts keyed by input/output names
    (or a Labelled as x_train). ``progress(epoch, logs)`` is called after each fine-tuning epoch (from 0).
    """
    tf, keras, tfmot = import_stack()
    strategy = build_local_strategy(tf, Strategy(options.strategy), options.replicas)  # before TF initialises
    keras.utils.set_random_seed(options.seed)
    with strategy.scope():
        source = load_keras_for_qat(model_path, options.trust_model_code)
        refuse_unsupported(source)
        data = match_data(source, x_train, y_train)
        in_names, out_names = list(source.input_names), list(source.output_names)
        if len(data) < 10:
            raise DataError(
                f"QAT needs at least 10 labelled training samples (some are held out to pick the "
                f"best epoch); got {len(data)}."
            )
        probe = data.take(np.arange(min(len(data), 512))).inputs(in_names)
        tasks = list(data.tasks)  # decided on the labels as given (match_data), not on their normalised form
        heads = detect_heads(out_names, predict(source, probe, len(out_names)), tasks)
        first = data.y[out_names[0]]
        fit, held = split(
            data,
            options.held_out_fraction,
            options.seed,
            out_names[0] if tasks[0] == "classification" and first.ndim == 1 else None,
        )
        rng = np.random.default_rng(options.seed)
        pick = np.sort(rng.permutation(len(fit))[: options.range_samples])
        samples = fit.take(pick).inputs(in_names)
        qat, folded, notes = build_qat_model(keras, tfmot, source, samples)
        notes["ranges_calibrated"] = calibrate_ranges(qat, _batches(samples, 64), tfmot_quantizer_types())
    teacher = predict(folded, fit.inputs(in_names), len(heads))
    targets = [h.targets(teacher[h.index], fit.y[h.name], options.distillation) for h in heads]
    held_ref = predict(folded, held.inputs(in_names), len(heads))
    schedule = Schedule(options.epochs, options.batch_size, options.learning_rate, options.patience, options.seed)
    history = fine_tune(
        tf,
        keras,
        qat,
        heads,
        (fit.inputs(in_names), targets),
        (held.inputs(in_names), held.labels(out_names), held_ref),
        schedule,
        progress,
    )
    best = max(history, key=lambda r: (r["held_out_accuracy"], r["agreement"], -r["epoch"]))
    notes.update(history=history, best_epoch=best["epoch"])
    return QatRun(qat, folded, heads, held, notes)


def quantization_aware_model(
    model_path: Path, x_train, y_train, options: QatOptions = QatOptions(), progress: Callable | None = None
):
    """``run_qat(...).model``, carrying ``edgetool_qat_notes`` (folds, float layers, history) as a plain attribute."""
    run = run_qat(model_path, x_train, y_train, options, progress)
    run.model.__dict__["edgetool_qat_notes"] = run.notes  # plain attribute: not tracked, not saved
    return run.model
