"""Annotate a folded model for tfmot: every layer the default 8-bit scheme supports, nothing else.

Layers tfmot cannot annotate (TF-op layers such as ``tf.cast`` or MobileNetV3's ``x + 3.0``, a Rescaling that
casts uint8 input, a Normalization that could not be folded exactly) stay float in the QAT model; the
full-integer converter calibrates them from the representative dataset, so the .tflite is still all int8.
BatchNorm layers that could not be folded are frozen (inference statistics while fine-tuning), so QAT trains
the graph the device will run. Recurrent layers are refused: tfmot's default scheme does not support them.
"""

from __future__ import annotations

from edge_tool.errors import ModelError

RECURRENT = ("LSTM", "GRU", "SimpleRNN", "RNN", "Bidirectional", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")


def refuse_unsupported(model) -> None:
    """ModelError for models QAT cannot fine-tune (no layer graph; recurrent layers), with the way out."""
    if not getattr(model, "_is_graph_network", False):
        raise ModelError(
            f"QAT needs a functional or Sequential Keras model (a graph of layers tfmot can rewrite), but this is a "
            f"subclassed {type(model).__name__} without one. Rebuild it with the functional API, or use --quant "
            "int8 for post-training quantization, which works on any SavedModel."
        )
    rnn = [f"{layer.name} ({type(layer).__name__})" for layer in model.layers if type(layer).__name__ in RECURRENT]
    if rnn:
        raise ModelError(
            f"QAT cannot fine-tune this model: it has recurrent layers ({', '.join(rnn)}), and "
            "tensorflow-model-optimization's 8-bit QAT scheme does not support LSTM/GRU/RNN layers (their cells "
            "are not in its registry). Use post-training quantization instead: --quant int8 (or dynamic/int16x8)."
        )


def annotate_supported(keras, tfmot, model):
    """Annotate every layer tfmot's default 8-bit scheme supports; others stay float (calibrated at conversion).

    Returns (annotated model, names of layers left un-annotated). BatchNorm layers are set non-trainable
    (tf_keras then runs them in inference mode during fine-tuning).
    """
    from tensorflow_model_optimization.python.core.quantization.keras.default_8bit import (  # noqa: PLC0415
        default_8bit_quantize_registry as registry_mod,
    )

    registry = registry_mod.Default8BitQuantizeRegistry()
    skipped: list[str] = []

    def annotate(layer):
        if isinstance(layer, keras.layers.InputLayer):
            return layer
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.trainable = False
        if registry.supports(layer):
            return tfmot.quantization.keras.quantize_annotate_layer(layer)
        skipped.append(layer.name)
        return layer

    annotated = keras.models.clone_model(model, clone_function=annotate)
    return annotated, skipped
