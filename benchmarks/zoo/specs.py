"""The zoo's model list: one :class:`ModelSpec` per model, what the builders and the benchmark must know about it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """A zoo entry: builder name, Keras flavour, and what the benchmark must know about the model."""

    name: str
    about: str
    keras3: bool = False
    recurrent: bool = False  # LSTM/GRU: fixed batch (convert --batch 1) and state reset per sample
    dynamic_hw: bool = False


SPECS = {s.name: s for s in (
    ModelSpec("mobilenet_v2", "keras.applications.MobileNetV2 (alpha 0.35, 32×32 RGB upscaled digits)"),
    ModelSpec("mobilenet_v3_small", "keras.applications.MobileNetV3Small (hard-swish TF-op layers, 32×32 RGB)"),
    ModelSpec("efficientnet_b0", "keras.applications.EfficientNetB0 (Rescaling → Normalization → conv, 32×32 RGB)"),
    ModelSpec("resnet_bn", "residual CNN, Conv → BN → ReLU with Add skips, on 8×8 digits"),
    ModelSpec("tfop_uint8", "uint8 input, tf.cast and tf.image.resize TF-op layers, CNN"),
    ModelSpec("bn_after_act", "Conv → ReLU → BatchNorm, SeparableConv2D, DepthwiseConv2D"),
    ModelSpec("embedding_lstm", "Embedding + LSTM over 64 pixel tokens (int32 ids)", recurrent=True),
    ModelSpec("bilstm_gru", "Bidirectional LSTM + GRU over 8 rows of 8 pixels", recurrent=True),
    ModelSpec("transformer", "Transformer encoder block (MultiHeadAttention, LayerNorm, FFN) over 8 rows"),
    ModelSpec("conv1d_audio", "Conv1D classifier of 256-sample noisy tones (4 frequency bands)"),
    ModelSpec("tabular_mlp", "MLP with an adapted Normalization layer on sklearn breast_cancer (30 features)"),
    ModelSpec("multi_input", "two inputs: image float32[N,8,8,1] and counts int32[N,8] (signature order ≠ model order)"),
    ModelSpec("multi_output", "two heads: digit softmax[N,10] and ink regression[N,1]"),
    ModelSpec("keras3_export", "Keras 3 CNN saved with model.export()", keras3=True),
    ModelSpec("tf_module", "plain tf.Module MLP trained with GradientTape, tf.saved_model.save"),
    ModelSpec("dynamic_hw", "CNN with input [N,?,?,1] and global pooling, trained on 16×16 digits", dynamic_hw=True),
)}
