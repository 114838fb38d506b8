"""Fold BatchNorm and input scaling into the neighbouring conv/dense weights — only where it is exact.

TFLite folds an inference BatchNorm into the conv before it, so QAT must fake-quantize the folded kernel;
tfmot left alone fake-quantizes the raw kernel and trains against the wrong weights. Which folds are exact (and
the float64 maths of each) is ``fold_plan``'s; here the folded weights are computed, the folds applied to a
rebuilt model, and ``fold_model`` checks the folded model against the original on sample data: a fold that
changes the output by more than a float32 rounding tolerance is dropped.
"""

from __future__ import annotations

import numpy as np

from edge_tool.qat.fold_plan import Fold, affine, compose, layer_class, plan_activation_fusions, plan_folds
from edge_tool.qat.graph import rebuild

__all__ = ["apply_folds", "fold_model", "folded_weights", "max_output_diff", "within_tolerance"]


def _weights(layer) -> tuple[list[np.ndarray], np.ndarray]:
    """(kernels as float64, bias as float64 — zeros when the layer has none)."""
    w = [np.asarray(v, np.float64) for v in layer.get_weights()]
    n_kernels = 2 if layer_class(layer) == "SeparableConv2D" else 1
    kernels = w[:n_kernels]
    last = kernels[-1]
    n_out = last.shape[-2] * last.shape[-1] if layer_class(layer) == "DepthwiseConv2D" else last.shape[-1]
    bias = w[n_kernels] if layer.use_bias else np.zeros(n_out)
    return kernels, bias


def folded_weights(model, target: str, folds: list[Fold]) -> list[np.ndarray]:
    """The target's new [kernel(s)..., bias] (float32): input scaling folded first, then the BatchNorm after it."""
    layer = model.get_layer(target)
    kernels, bias = _weights(layer)
    depthwise = layer_class(layer) == "DepthwiseConv2D"
    for fold in sorted(folds, key=lambda f: f.kind != "input-affine"):
        if fold.kind == "activation":
            continue
        if fold.kind == "input-affine":
            channels = kernels[0].shape[-2]
            scale, offset = compose([affine(model.get_layer(n), channels) for n in fold.removed])
            k = kernels[0]
            shifted = k * offset.reshape(-1, 1)
            bias = bias + (
                shifted.sum(axis=tuple(range(k.ndim - 2))).reshape(-1)
                if depthwise
                else shifted.sum(axis=tuple(range(k.ndim - 1)))
            )
            kernels[0] = k * scale.reshape(-1, 1)
        else:
            bn = model.get_layer(fold.removed[0])
            n_out = bias.shape[0]
            gamma = bn.gamma.numpy() if bn.gamma is not None else np.ones(n_out)
            beta = bn.beta.numpy() if bn.beta is not None else np.zeros(n_out)
            k = gamma.astype(np.float64) / np.sqrt(bn.moving_variance.numpy().astype(np.float64) + bn.epsilon)
            bias = (bias - bn.moving_mean.numpy()) * k + beta
            last = kernels[-1]
            kernels[-1] = last * (k.reshape(last.shape[-2], last.shape[-1]) if depthwise else k)
    return [k.astype(np.float32) for k in kernels] + [bias.astype(np.float32)]


def apply_folds(keras, model, folds: list[Fold]):
    """A new functional model with ``folds`` applied (other layers shared with ``model``)."""
    removed = {name for f in folds for name in f.removed}
    targets: dict[str, list[Fold]] = {}
    for f in folds:
        targets.setdefault(f.target, []).append(f)
    new_layers = {}

    def call_layer(layer, args, kwargs, run):
        if layer.name in removed:
            return args[0] if args else next(iter(kwargs.values()))
        if layer.name in targets:
            cfg = {**layer.get_config(), "use_bias": True}
            for f in targets[layer.name]:
                if f.kind == "activation":
                    cfg["activation"] = f.activation
            new = type(layer).from_config(cfg)
            new_layers[layer.name] = new
            return new(*args, **kwargs)
        return run()

    new = rebuild(keras, model, call_layer)
    for name, layer in new_layers.items():
        layer.set_weights(folded_weights(model, name, targets[name]))
    return new


def max_output_diff(a, b, samples: list[np.ndarray]) -> tuple[float, float]:
    """(max |a(x) - b(x)| over every output, max |b(x)|) in inference mode."""
    import tensorflow as tf

    fa = tf.nest.flatten(a(samples, training=False))
    fb = tf.nest.flatten(b(samples, training=False))
    diff = max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) for x, y in zip(fa, fb))
    scale = max(float(np.max(np.abs(np.asarray(y)))) for y in fb)
    return diff, scale


def within_tolerance(diff: float, scale: float) -> bool:
    """float32 rounding tolerance for a folded model's output: 1e-5 absolute + 1e-4 relative."""
    return diff <= 1e-5 + 1e-4 * max(scale, 1.0)


def _verified(keras, flat, folds: list[Fold], original, samples) -> tuple[object, list[Fold], list[Fold]]:
    """(model, kept, dropped): ``folds`` applied to ``flat`` where the result still matches ``original``."""
    if not folds:
        return flat, [], []
    candidate = apply_folds(keras, flat, folds)
    if within_tolerance(*max_output_diff(candidate, original, samples)):
        return candidate, folds, []
    kept = [f for f in folds if within_tolerance(*max_output_diff(apply_folds(keras, flat, [f]), original, samples))]
    if kept:
        candidate = apply_folds(keras, flat, kept)
        if within_tolerance(*max_output_diff(candidate, original, samples)):
            return candidate, kept, [f for f in folds if f not in kept]
    return flat, [], folds


def fold_model(keras, model, samples: list[np.ndarray]):
    """Fold what is exact and verified on ``samples`` (one array per model input).

    BatchNorm and input scaling first, then separate ReLU layers into the conv/dense before them. Returns
    (folded functional model, fold notes, dropped notes). A fold whose model differs from the original beyond
    ``within_tolerance`` is dropped (each is then checked on its own).
    """
    flat = rebuild(keras, model)  # nested models inlined: tfmot cannot quantize a model inside a model
    folded, kept, dropped = _verified(keras, flat, plan_folds(flat), model, samples)
    fused, kept2, dropped2 = _verified(keras, folded, plan_activation_fusions(folded), model, samples)
    return fused, [f.describe() for f in kept + kept2], [f.describe() for f in dropped + dropped2]
