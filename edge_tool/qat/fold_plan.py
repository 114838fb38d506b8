"""Which folds into the neighbouring conv/dense are exact (``folding`` computes, applies and verifies them).

Folds (float64 maths):

* BatchNormalization directly after a conv/dense with a linear activation whose output feeds only the BN:
  ``W' = W * k``, ``b' = (b - mean) * k + beta``, ``k = gamma / sqrt(var + eps)`` (per output channel).
* A chain of Rescaling / Normalization layers (per-channel ``x * s + o`` on the last axis) feeding only one
  conv/dense: ``W' = W * s`` (per input channel), ``b' = b + sum(W * o)``. With a non-zero offset this is exact
  only when no zero padding is added (a Dense, or a conv with ``padding="valid"`` or a 1-wide kernel): padding
  zeros in the input's units are not the zeros the conv saw after scaling. And only when the per-channel
  scales are within a factor ``MAX_SCALE_SPREAD`` of each other: the int8 kernel is quantized per output
  channel, so folding wildly different feature scales into one channel's weights would zero the small ones.

BatchNorm after an activation, a Normalization before ``ZeroPadding2D`` or a ``same``-padded conv, integer
inputs a Rescaling casts: all stay as they are (tfmot or the converter's calibration handles them).
Separate ReLU/ReLU6 layers after a linear conv/dense become its activation (``plan_activation_fusions``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge_tool.qat.graph import read_graph

ACT_TARGETS = ("Conv2D", "DepthwiseConv2D", "Dense")
BN_TARGETS = ("Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv2D", "Dense")
AFFINE_TARGETS = ("Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "Dense")
AFFINE_LAYERS = ("Rescaling", "Normalization")


@dataclass(frozen=True)
class Fold:
    """One exact fold: ``removed`` layers disappear, ``target`` gets new weights."""

    target: str
    removed: tuple[str, ...]
    kind: str  # "batchnorm" (after target), "input-affine" (before target) or "activation" (relu/relu6 after)
    activation: str | None = None  # for "activation": the Keras activation the target takes on

    def describe(self) -> str:
        """``bn1 -> conv1`` style note."""
        return f"{' + '.join(self.removed)} -> {self.target}"


def layer_class(layer) -> str:
    """The Keras layer's class name (``Conv2D``, ``BatchNormalization`` …)."""
    return type(layer).__name__


def _linear(layer) -> bool:
    act = getattr(layer, "activation", None)
    return act is None or getattr(act, "__name__", "") == "linear"


def _last_axis(axis, rank: int) -> bool:
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return len(axes) == 1 and axes[0] in (-1, rank - 1)


def _bn_folds(model, graph) -> list[Fold]:
    folds = []
    for node in graph.nodes:
        bn = node.layer
        if layer_class(bn) != "BatchNormalization" or graph.node_of(bn) is None:
            continue
        t = graph.single_input(bn)
        prod = graph.producer.get(id(t)) if t is not None else None
        if (
            prod is None
            or layer_class(prod) not in BN_TARGETS
            or not _linear(prod)
            or graph.node_of(prod) is None
            or graph.only_consumer(t) is not bn
            or not _last_axis(bn.axis, len(t.shape))
            or getattr(prod, "groups", 1) != 1
        ):
            continue
        folds.append(Fold(prod.name, (bn.name,), "batchnorm"))
    return folds


def affine(layer, channels: int):
    """(scale, offset) vectors over the last axis for a Rescaling/Normalization layer, or None."""
    if layer_class(layer) == "Rescaling":
        scale, offset = np.asarray(layer.scale, np.float64), np.asarray(layer.offset, np.float64)
    elif layer_class(layer) == "Normalization" and not getattr(layer, "invert", False):
        if not _last_axis(layer.axis, len(layer.input_shape)):
            return None
        mean = np.asarray(layer.mean, np.float64)
        std = np.maximum(np.sqrt(np.asarray(layer.variance, np.float64)), 1e-7)  # keras backend.epsilon()
        scale, offset = 1.0 / std, -mean / std
    else:
        return None
    vecs = []
    for v in (scale, offset):
        flat = v.reshape(-1)
        if v.size not in (1, channels) or (v.ndim and any(d != 1 for d in v.shape[:-1])):
            return None
        vecs.append(np.broadcast_to(flat, (channels,)).astype(np.float64))
    return tuple(vecs)


def _no_padding(layer) -> bool:
    if layer_class(layer) == "Dense" or getattr(layer, "padding", "valid") == "valid":
        return True
    return all(k == 1 for k in layer.kernel_size)


MAX_SCALE_SPREAD = 4.0


def _int8_friendly(scale: np.ndarray) -> bool:
    """True when per-channel scales are close enough that folding them keeps the kernel quantizable.

    Folding multiplies each input row of the kernel by its channel's scale; int8 kernels are quantized per
    output channel, so scales spread over orders of magnitude (a Normalization of raw tabular features) would
    leave the small rows at zero. Exact in float, ruinous in int8: such a Normalization stays a layer.
    """
    mags = np.abs(scale[scale != 0.0])
    return mags.size == scale.size and float(mags.max() / mags.min()) <= MAX_SCALE_SPREAD


def _affine_folds(model, graph) -> list[Fold]:
    folds = []
    for node in graph.nodes:
        target = node.layer
        if layer_class(target) not in AFFINE_TARGETS or graph.node_of(target) is None:
            continue
        chain, t = [], graph.single_input(target)
        consumer = target
        while t is not None:
            prod = graph.producer.get(id(t))
            if (
                prod is None
                or layer_class(prod) not in AFFINE_LAYERS
                or graph.node_of(prod) is None
                or graph.only_consumer(t) is not consumer
            ):
                break
            src = graph.single_input(prod)
            if src is None or not src.dtype.is_floating or affine(prod, int(t.shape[-1])) is None:
                break
            chain.insert(0, prod)
            consumer, t = prod, src
        if not chain:
            continue
        scale, offset = compose([affine(layer, int(target.input_shape[-1])) for layer in chain])
        if np.any(offset != 0.0) and not _no_padding(target):
            continue
        if not _int8_friendly(scale):
            continue
        folds.append(Fold(target.name, tuple(layer.name for layer in chain), "input-affine"))
    return folds


def compose(affines: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One (scale, offset) for ``x`` going through the affine maps in order."""
    scale, offset = np.ones_like(affines[0][0]), np.zeros_like(affines[0][1])
    for s, o in affines:
        scale, offset = scale * s, offset * s + o
    return scale, offset


def plan_folds(model) -> list[Fold]:
    """Every exact BatchNorm / input-scaling fold in ``model`` (a functional model without nested models)."""
    graph = read_graph(model)
    return _affine_folds(model, graph) + _bn_folds(model, graph)


def _relu_kind(layer) -> str | None:
    """ "relu"/"relu6" when ``layer`` is a separate ReLU/Activation layer computing exactly that, else None."""
    if layer_class(layer) == "ReLU":
        slope, threshold = float(layer.negative_slope), float(layer.threshold)
        cap = None if layer.max_value is None else float(layer.max_value)
        if slope == 0.0 and threshold == 0.0 and cap in (None, 6.0):
            return "relu" if cap is None else "relu6"
    if layer_class(layer) == "Activation":
        name = getattr(layer.activation, "__name__", "")
        return name if name in ("relu", "relu6") else None
    return None


def plan_activation_fusions(model) -> list[Fold]:
    """ReLU/ReLU6 layers directly after a linear conv/dense that feeds only them.

    tfmot's layout transform ``LayerReLUQuantize`` gives a Conv2D/Dense followed by a separate ReLU layer a
    no-op quantize config, so its weights would never be fake-quantized; as the conv's own activation (what
    TFLite fuses anyway) they are.
    """
    graph = read_graph(model)
    fusions = []
    for node in graph.nodes:
        act = _relu_kind(node.layer)
        t = graph.single_input(node.layer) if act else None
        prod = graph.producer.get(id(t)) if t is not None else None
        if (
            prod is not None
            and layer_class(prod) in ACT_TARGETS
            and _linear(prod)
            and graph.node_of(prod) is not None
            and graph.only_consumer(t) is node.layer
        ):
            fusions.append(Fold(prod.name, (node.layer.name,), "activation", act))
    return fusions
