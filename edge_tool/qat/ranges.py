"""Start QAT's fake-quant ranges where post-training calibration would put them, not at tfmot's [-6, 6].

tfmot's ``MovingAverageQuantizer`` starts every activation range at [-6, 6] and moves it with an EMA of
decay 0.999 (``quant_ops.MovingAvgQuantize``): after the few hundred steps of a short fine-tuning the ranges
have moved by a few percent, so activations beyond +-6 are clipped and small ones get a coarse grid — the
main way naive QAT loses to plain int8 PTQ. Weight ranges (``LastValueQuantizer``) are only set on the first
training step, so the fresh QAT model is not even usable in inference mode.

``calibrate_ranges`` runs the QAT model over sample batches in inference mode (BatchNorm statistics and
Dropout untouched) while each activation quantizer records the running min/max of what it sees (with 0 in
the range, as tfmot and TFLite require) and fake-quantizes with it; weight quantizers take their weights'
min/max. After it the QAT model computes what the int8 PTQ model computes, and fine-tuning starts from there.
"""

from __future__ import annotations

from collections.abc import Iterable


def _quantizer_objects(model) -> list[tuple[object, str]]:
    """(quantizer, "weight"|"activation") for every tfmot quantizer in ``model``'s wrappers and quantize layers."""
    found = []
    for layer in model.layers:
        for _, quantizer, _ in getattr(layer, "_weight_vars", []):
            found.append((quantizer, "weight"))
        for act in getattr(layer, "_quantize_activations", []):
            found.append((act.quantizer, "activation"))
        for quantizer in getattr(layer, "_output_quantizers", None) or []:
            found.append((quantizer, "activation"))
        if getattr(layer, "quantizer", None) is not None and hasattr(layer, "quantizer_vars"):
            found.append((layer.quantizer, "activation"))
    unique = {id(q): (q, kind) for q, kind in found}
    return list(unique.values())


def _calibrating_class(base: type, kind: str, seen: set) -> type:
    import tensorflow as tf

    def call(self, inputs, training, weights, **kwargs):
        if kind == "weight":  # LastValueQuantizer in training mode: range = the weights' own min/max
            return base.__call__(self, inputs, True, weights, **kwargs)
        lo, hi = weights["min_var"], weights["max_var"]
        axes = list(range(inputs.shape.rank - 1)) if getattr(self, "per_axis", False) else None
        batch_lo = tf.minimum(tf.reduce_min(inputs, axis=axes), 0.0)
        batch_hi = tf.maximum(tf.reduce_max(inputs, axis=axes), 0.0)
        if id(lo) in seen:
            batch_lo, batch_hi = tf.minimum(batch_lo, lo), tf.maximum(batch_hi, hi)
        seen.add(id(lo))
        lo.assign(tf.broadcast_to(batch_lo, lo.shape))
        hi.assign(tf.broadcast_to(batch_hi, hi.shape))
        return base.__call__(self, inputs, False, weights, **kwargs)

    return type(f"Calibrating{base.__name__}", (base,), {"__call__": call})


def calibrate_ranges(model, batches: Iterable[list], quantizer_types: dict[str, type]) -> int:
    """Set every fake-quant range of ``model`` from ``batches`` (lists of arrays, one per input).

    ``quantizer_types`` maps "weight"/"activation" to the tfmot classes handled, subclasses included (other
    quantizers are left alone).
    Returns how many quantizers were calibrated.
    """
    seen: set = set()
    swapped = []
    try:
        for quantizer, kind in _quantizer_objects(model):
            base = type(quantizer)
            if not isinstance(quantizer, tuple(quantizer_types.get(kind, ()))):
                continue
            quantizer.__class__ = _calibrating_class(base, kind, seen)
            swapped.append((quantizer, base))
        for batch in batches:
            model(batch, training=False)
    finally:
        for quantizer, base in swapped:
            quantizer.__class__ = base
    return len(swapped)


def tfmot_quantizer_types() -> dict[str, tuple[type, ...]]:
    """The default 8-bit scheme's quantizer classes, by the kind of tensor they quantize."""
    from tensorflow_model_optimization.python.core.quantization.keras import quantizers

    return {
        "weight": (quantizers.LastValueQuantizer,),
        "activation": (quantizers.MovingAverageQuantizer, quantizers.AllValuesQuantizer),
    }
