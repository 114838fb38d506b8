"""Rebuild a Keras model with BatchNormalization and Rescaling folded into the neighbouring conv/dense weights.

tfmot's ``quantize_model`` cannot quantize a SavedModel-revived Conv2D -> BatchNormalization pair, and
quantizing the raw (unfolded) kernel trains against the wrong weights anyway: TFLite folds BatchNorm into the
conv at conversion time, so QAT must see the folded kernel.  Folding is exact in float32 arithmetic:

* BatchNorm after a linear conv/dense:  W' = W * k,  b' = (b - mean) * k + beta,  k = gamma / sqrt(var + eps)
* Rescaling (scalar scale s, offset o) before a conv/dense:  W' = W * s,  b' = b + o * sum(W over inputs)
  (an offset is only folded when it is exact: a Dense, or a conv with ``padding="valid"``).
"""

from __future__ import annotations

import copy

import numpy as np

from edge_tool.errors import ModelError

_WEIGHTED = ("Conv2D", "DepthwiseConv2D", "Dense")


def _single_inbound(entry: dict) -> str | None:
    """Name of the one layer feeding ``entry`` (functional config), or None if it has 0 or several inputs."""
    nodes = entry.get("inbound_nodes") or []
    if len(nodes) != 1 or len(nodes[0]) != 1:
        return None
    return nodes[0][0][0]


def _consumers(layers: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {e["name"]: [] for e in layers}
    for e in layers:
        for node in e.get("inbound_nodes") or []:
            for inbound in node:
                out.setdefault(inbound[0], []).append(e["name"])
    return out


def _is_linear(cfg: dict) -> bool:
    return cfg.get("activation", "linear") in ("linear", None)


def _last_axis_bn(layer) -> bool:
    axis = layer.axis if isinstance(layer.axis, (list, tuple)) else [layer.axis]
    rank = len(layer.input_shape)
    return len(axis) == 1 and axis[0] in (-1, rank - 1)


def _scalar(value) -> float | None:
    arr = np.asarray(value, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else None


def plan_folds(model) -> tuple[dict[str, str], dict[str, str]]:
    """Return ({bn name: producer name}, {rescaling name: consumer name}) for the foldable pairs of ``model``."""
    layers = model.get_config()["layers"]
    by_name = {e["name"]: e for e in layers}
    consumers = _consumers(layers)
    bn_into: dict[str, str] = {}
    rescale_into: dict[str, str] = {}
    for e in layers:
        src = _single_inbound(e)
        if src is None or src not in by_name:
            continue
        prod = by_name[src]
        if (e["class_name"] == "BatchNormalization" and prod["class_name"] in _WEIGHTED
                and _is_linear(prod["config"]) and consumers[src] == [e["name"]]
                and _last_axis_bn(model.get_layer(e["name"]))):
            bn_into[e["name"]] = src
    for e in layers:
        src = _single_inbound(e)
        if src is None or src not in by_name or by_name[src]["class_name"] != "Rescaling":
            continue
        resc = model.get_layer(src)
        if not resc.input.dtype.is_floating:  # Rescaling also casts integer input to float: keep it
            continue
        scale, offset = _scalar(resc.scale), _scalar(resc.offset)
        cfg = e["config"]
        exact_offset = offset == 0.0 or e["class_name"] == "Dense" or cfg.get("padding") == "valid"
        if (e["class_name"] in ("Conv2D", "Dense") and cfg.get("groups", 1) == 1 and scale is not None
                and offset is not None and exact_offset and consumers[src] == [e["name"]]):
            rescale_into[src] = e["name"]
    return bn_into, rescale_into


def _rewire(cfg: dict, removed: dict[str, str]) -> dict:
    """Drop the ``removed`` layers from a functional config, pointing their consumers at their input."""
    cfg = copy.deepcopy(cfg)
    layers = cfg["layers"]
    source_of = {}
    for e in layers:
        if e["name"] in removed:
            source_of[e["name"]] = e["inbound_nodes"][0][0][:3]

    def resolve(ref):
        while ref[0] in source_of:
            ref = list(source_of[ref[0]])
        return ref

    kept = []
    for e in layers:
        if e["name"] in removed:
            continue
        e["inbound_nodes"] = [
            [[*resolve(inb[:3]), *inb[3:]] for inb in node] for node in e.get("inbound_nodes") or []
        ]
        kept.append(e)
    cfg["layers"] = kept
    cfg["output_layers"] = [resolve(list(ref)) for ref in cfg["output_layers"]]
    return cfg


def _input_axes(kernel: np.ndarray, class_name: str) -> tuple[int, ...]:
    return (0,) if class_name == "Dense" else (0, 1, 2)


def _folded_weights(model, name: str, rescale: str | None, bn: str | None) -> list[np.ndarray]:
    layer = model.get_layer(name)
    cls = type(layer).__name__
    kernel = layer.get_weights()[0].astype(np.float64)
    n_out = kernel.shape[-1] if cls != "DepthwiseConv2D" else kernel.shape[2] * kernel.shape[3]
    bias = layer.bias.numpy().astype(np.float64) if layer.use_bias else np.zeros(n_out)
    if rescale is not None:
        resc = model.get_layer(rescale)
        bias = bias + _scalar(resc.offset) * kernel.sum(axis=_input_axes(kernel, cls))
        kernel = kernel * _scalar(resc.scale)
    if bn is not None:
        b = model.get_layer(bn)
        gamma = b.gamma.numpy() if b.gamma is not None else np.ones(n_out)
        beta = b.beta.numpy() if b.beta is not None else np.zeros(n_out)
        k = gamma.astype(np.float64) / np.sqrt(b.moving_variance.numpy().astype(np.float64) + b.epsilon)
        bias = (bias - b.moving_mean.numpy()) * k + beta
        kernel = kernel * (k.reshape(kernel.shape[2], kernel.shape[3]) if cls == "DepthwiseConv2D" else k)
    return [kernel.astype(np.float32), bias.astype(np.float32)]


def as_functional(keras, model):
    """The model as a functional graph (Sequential models are re-wrapped); ModelError for subclassed models."""
    if isinstance(model, keras.Sequential) or not getattr(model, "_is_graph_network", False):
        if not getattr(model, "inputs", None):
            raise ModelError(
                f"QAT needs a functional or Sequential Keras model with known inputs, but got a "
                f"{type(model).__name__} without them (a subclassed model?). Rebuild it with the functional API."
            )
        model = keras.Model(model.inputs, model.outputs, name=model.name)
    return model


def fold_model(keras, model):
    """Return a new functional model equal (in inference) to ``model`` with BatchNorm and Rescaling folded away.

    Returns (new model, list of "a -> b" fold descriptions).
    """
    model = as_functional(keras, model)
    bn_into, rescale_into = plan_folds(model)
    removed = {**{bn: p for bn, p in bn_into.items()}, **{r: c for r, c in rescale_into.items()}}
    cfg = _rewire(model.get_config(), removed)
    touched = set(bn_into.values()) | set(rescale_into.values())
    for e in cfg["layers"]:
        if e["name"] in touched:
            e["config"]["use_bias"] = True
    new = keras.Model.from_config(cfg)
    producer_bn = {p: bn for bn, p in bn_into.items()}
    consumer_rescale = {c: r for r, c in rescale_into.items()}
    for layer in new.layers:
        if layer.name in touched:
            layer.set_weights(_folded_weights(model, layer.name, consumer_rescale.get(layer.name),
                                              producer_bn.get(layer.name)))
        elif layer.weights:
            layer.set_weights(model.get_layer(layer.name).get_weights())
    notes = [f"{bn} -> {p}" for bn, p in bn_into.items()] + [f"{r} -> {c}" for r, c in rescale_into.items()]
    return new, notes
