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


# What tfmot 0.8's default 8-bit scheme accepts, used when its private sets cannot be read.
_LAYER_ACTIVATIONS = frozenset({"linear", "relu", "swish", "gelu", "softmax", "sigmoid", "tanh", "NoOpActivation"})
_ACTIVATION_LAYER = frozenset({"relu", "swish", "gelu", "relu6", "linear", "softmax", "sigmoid", "tanh"})


def _layer_activations() -> frozenset[str]:
    """Activation names tfmot's QuantizeAwareActivation takes on a conv/dense (``relu6``, ``elu``… it refuses)."""
    try:
        from tensorflow_model_optimization.python.core.quantization.keras.quantize_aware_activation import (
            QuantizeAwareActivation as qaa,
        )

        return frozenset(qaa._PRE_QUANT_ACTIVATIONS | qaa._POST_QUANT_ACTIVATIONS | qaa._NO_QUANTIZE_ACTIVATIONS)
    except (ImportError, AttributeError):
        return _LAYER_ACTIVATIONS


def _activation_supported(keras, layer) -> bool:
    """False when tfmot's default config would refuse ``layer``'s activation (e.g. Dense(activation="elu"))."""
    act = getattr(layer, "activation", None)
    if act is None:
        return True
    name = getattr(act, "__name__", type(act).__name__)
    return name in (_ACTIVATION_LAYER if isinstance(layer, keras.layers.Activation) else _layer_activations())


def _output_after_activation(keras, registry, layer):
    """A config that fake-quantizes the layer's weights (as the default does) and its output after its own activation.

    That is how TFLite runs such a layer (the op, then the activation, then an int8 output); tfmot's default
    config instead wraps the activation in QuantizeAwareActivation, which knows only a few activations.
    """
    from tensorflow_model_optimization.python.core.quantization.keras.default_8bit import (
        default_8bit_quantize_registry as registry_mod,
    )

    if isinstance(layer, keras.layers.Activation):
        return registry_mod.Default8BitQuantizeConfig([], [], True)
    default = registry.get_quantize_config(layer)
    if type(default) not in (registry_mod.Default8BitQuantizeConfig, registry_mod.Default8BitConvQuantizeConfig):
        return None
    return type(default)(default.weight_attrs, [], True)


def annotate_supported(keras, tfmot, model):
    """Annotate every layer tfmot's default 8-bit scheme supports; others stay float (calibrated at conversion).

    A layer of a supported type whose activation tfmot's default config refuses (``elu``, ``relu6`` on a conv…)
    gets a config that quantizes its weights and its output after the activation; quantize_apply would otherwise
    refuse the whole model (also when such a layer is left float, since tfmot then quantizes its output with the
    same default config).

    Returns (annotated model, names of layers left un-annotated). BatchNorm layers are set non-trainable
    (tf_keras then runs them in inference mode during fine-tuning).
    """
    from tensorflow_model_optimization.python.core.quantization.keras.default_8bit import (
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
            if _activation_supported(keras, layer):
                return tfmot.quantization.keras.quantize_annotate_layer(layer)
            if (config := _output_after_activation(keras, registry, layer)) is not None:
                return tfmot.quantization.keras.quantize_annotate_layer(layer, quantize_config=config)
        skipped.append(layer.name)
        return layer

    annotated = keras.models.clone_model(model, clone_function=annotate)
    return annotated, skipped
