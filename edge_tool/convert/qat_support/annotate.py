"""Annotate a folded model for tfmot: every layer the default 8-bit scheme supports, nothing else.

Layers tfmot cannot annotate (e.g. a Rescaling that casts uint8 input) stay float in the QAT model; the
full-integer converter calibrates them from the representative dataset, so the .tflite is still all int8.
Activation ranges keep tfmot's own start ([-6, 6], then an EMA): starting them at the float model's measured
min/max or 99.9th percentile was tried and was never better on the digits CNN over five training seeds.
"""

from __future__ import annotations


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
