"""Annotate a folded model for tfmot and start its fake-quant ranges from real activation statistics.

tfmot starts every activation range at [-6, 6] and moves it by an EMA with decay 0.999, so a short
fine-tune (a few hundred steps) never gets near the real ranges: activations are quantized on a grid far too
coarse, which is most of why naive QAT loses to plain post-training int8.  Here each activation range is set
from the float model's min/max over the training data (what the TFLite calibrator does for PTQ) before
fine-tuning, and the EMA then only refines it.
"""

from __future__ import annotations

import numpy as np

_PRE_QUANT = ("softmax", "sigmoid", "tanh", "gelu")
_RANGE_SUFFIXES = {"post_activation": "post", "output": "post", "pre_activation": "pre"}


def annotate_supported(keras, tfmot, model):
    """Annotate every layer tfmot's default 8-bit scheme supports; others stay float (calibrated at conversion).

    Returns (annotated model, names of layers left un-annotated).
    """
    from tensorflow_model_optimization.python.core.quantization.keras.default_8bit import (  # noqa: PLC0415
        default_8bit_quantize_registry as registry_mod,
    )

    registry = registry_mod.Default8BitQuantizeRegistry()
    skipped: list[str] = []

    def annotate(layer):
        if isinstance(layer, keras.layers.InputLayer):
            return layer
        if registry.supports(layer):
            return tfmot.quantization.keras.quantize_annotate_layer(layer)
        skipped.append(layer.name)
        return layer

    annotated = keras.models.clone_model(model, clone_function=annotate)
    return annotated, skipped


def _activation_name(layer) -> str:
    act = getattr(layer, "activation", None)
    return getattr(act, "__name__", "linear") if act is not None else "linear"


def _pre_activation_tensor(layer):
    """The layer's output before its (pre-quantized) activation, via a linear twin sharing its weights."""
    cfg = layer.get_config()
    cfg["activation"] = "linear"
    cfg["name"] = f"{layer.name}__preact"
    twin = type(layer).from_config(cfg)
    out = twin(layer.input)
    twin.set_weights(layer.get_weights())
    return out


def _probe_targets(qat_model, float_model) -> list[tuple[object, object]]:
    """(range variable, float tensor) pairs for every activation range variable of the QAT model."""
    pairs = []
    twins: dict[str, object] = {}
    for qlayer in qat_model.layers:
        wrapped = getattr(qlayer, "layer", None)
        for var in qlayer.non_trainable_weights:
            short = var.name.split("/")[-1].split(":")[0]
            if not short.endswith(("_min", "_max")):
                continue
            kind = "input" if type(qlayer).__name__ == "QuantizeLayer" else _RANGE_SUFFIXES.get(short.rsplit("_", 1)[0])
            if kind is None:  # kernel_min / depthwise_kernel_min: refreshed from the weights every step
                continue
            if kind == "input":
                src = qlayer.inbound_nodes[0].inbound_layers
                src = src[0] if isinstance(src, list) else src
                tensor = float_model.get_layer(src.name).output
            else:
                flayer = float_model.get_layer(wrapped.name)
                if kind == "pre" and _activation_name(flayer) in _PRE_QUANT:
                    if flayer.name not in twins:
                        twins[flayer.name] = _pre_activation_tensor(flayer)
                    tensor = twins[flayer.name]
                else:
                    tensor = flayer.output
            pairs.append((var, tensor))
    return pairs


def calibrate_ranges(keras, qat_model, float_model, x: np.ndarray, batch_size: int = 256) -> int:
    """Set the QAT model's activation min/max variables from ``float_model`` activations on ``x``.

    Returns how many range variables were set.
    """
    pairs = _probe_targets(qat_model, float_model)
    if not pairs:
        return 0
    unique = {}
    for _, tensor in pairs:
        unique.setdefault(id(tensor), tensor)
    tensors = list(unique.values())
    probe = keras.Model(float_model.inputs, tensors)
    lo = {k: np.inf for k in unique}
    hi = {k: -np.inf for k in unique}
    for start in range(0, len(x), batch_size):
        outs = probe(x[start:start + batch_size], training=False)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for key, out in zip(unique, outs):
            arr = np.asarray(out)
            lo[key] = min(lo[key], float(arr.min()))
            hi[key] = max(hi[key], float(arr.max()))
    for var, tensor in pairs:
        is_min = var.name.split(":")[0].endswith("_min")
        value = min(lo[id(tensor)], 0.0) if is_min else max(hi[id(tensor)], 0.0)
        var.assign(np.full(var.shape, value, dtype=np.float32))
    return len(pairs)
