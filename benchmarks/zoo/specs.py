"""The zoo's model list: one :class:`ModelSpec` per model, what the builders and the benchmark must know about it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelSpec:
    """A zoo entry: builder name, Keras flavour, and what the benchmark must know about the model."""

    name: str
    about: str
    keras3: bool = False
    recurrent: bool = False  # LSTM/GRU: fixed batch (convert --batch 1) and state reset per sample
    dynamic_hw: bool = False
    task: str = "classification"  # a task of edgetool's registry: classification, ..., embedding, image, heatmap
    model_file: str = ""  # the model is this file (model.keras) or SavedModel sub-directory inside the model directory
    mixed: bool = False  # trained under a mixed-precision policy: float32 files are checked against twin.npz
    extra_args: tuple[str, ...] = ()  # added to every cell's command; "{dir}" is the model directory
    # the signature the data files feed and the oracle runs (a TF-Serving export's pixel signature beside an
    # image-bytes serving_default: the cells convert serving_default, and their way out is --signature NAME)
    data_signature: str = field(default="serving_default", repr=False)  # out of repr: the cache keys of others hold
    # cell ("*" = every cell) -> regexes a refusal's reason must all match: the real cause (and its way out)
    refusals: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # a Python module whose import registers the graph's custom ops (tensorflow_text): the oracle loads the model with
    # it, as the user's own script would (edgetool does not load op libraries)
    op_library: str = field(default="", repr=False)

    def expected_refusal(self, cell: str) -> tuple[str, ...]:
        """The patterns a refusal of ``cell`` must match (empty: any refusal is judged by the raw tools only)."""
        found = dict(self.refusals)
        return found.get(cell, ()) + found.get("*", ())


TF1_REF = (r"reference variables", r"enable_resource_variables")  # the TFLite converter cannot read VariableV2
GELU_TFJS = ("tfjs", (r"Erfc", r"--litert"))  # tensorflowjs has no Erfc op (exact GELU): name it and the way out


SPECS = {
    s.name: s
    for s in (
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
        ModelSpec(
            "multi_input", "two inputs: image float32[N,8,8,1] and counts int32[N,8] (signature order ≠ model order)"
        ),
        ModelSpec("multi_output", "two heads: digit softmax[N,10] and ink regression[N,1]"),
        ModelSpec("keras3_export", "Keras 3 CNN saved with model.export()", keras3=True),
        ModelSpec("tf_module", "plain tf.Module MLP trained with GradientTape, tf.saved_model.save"),
        ModelSpec(
            "dynamic_hw", "CNN with input [N,?,?,1] and global pooling, trained on 16×16 digits", dynamic_hw=True
        ),
        # issue 22: tasks beyond classification, .keras files, multi-signature, exact GELU, GroupNorm, Python
        # callbacks, string input, open H×W with in-graph preprocessing, STFT front end, video
        ModelSpec(
            "regression_mlp",
            "Normalization → MLP → one value, sklearn diabetes (10 features, raw targets)",
            task="regression",
        ),
        ModelSpec(
            "multilabel_sigmoid",
            "CNN → 4 independent sigmoid tags of a digit (even, > 4, < 3, has a loop)",
            task="multilabel",
        ),
        ModelSpec(
            "unet_seg",
            "U-Net (conv, pool, upsample, skip concat) → per-pixel softmax of 3 ink levels, 16×16",
            task="segmentation",
        ),
        ModelSpec(
            "detection_heads",
            "digit placed in a 16×16 canvas → `classes` softmax[N,10] + `boxes` sigmoid[N,4]",
            task="detection",
        ),
        ModelSpec(
            "convnext_keras",
            "ConvNeXt block (depthwise 7×7, LayerNorm, exact GELU MLP, residual), Keras 3 `.keras` file",
            keras3=True,
            model_file="model.keras",
            refusals=(GELU_TFJS,),
        ),
        ModelSpec("multi_signature", "tf.Module with 3 signatures (a_features, b_logits, serving_default: sorts last)"),
        ModelSpec(
            "gelu_transformer",
            "Transformer block with exact GELU (tf.nn.gelu → Erfc) over 8 rows",
            refusals=(GELU_TFJS,),
        ),
        ModelSpec("groupnorm", "Conv → GroupNormalization(4 groups) → ReLU ×2 on 8×8 digits"),
        ModelSpec(
            "numpy_function",
            "tf.Module whose serving function calls tf.numpy_function before a Keras CNN",
            refusals=(("*", (r"numpy_function|PyFunc|Python",)),),
        ),
        ModelSpec(
            "text_vectorization",
            "string input → TextVectorization → Embedding → pooling → softmax(4 topics)",
            refusals=(("tfjs", (r"string",)),),
        ),
        ModelSpec(
            "resize_standardize",
            "input [N,?,?,1] → tf.image.resize 16×16 → per_image_standardization → CNN",
            dynamic_hw=True,
        ),
        ModelSpec("stft_logmel", "waveform[N,256] → tf.signal.stft → |·| → mel matrix → log → CNN, 4 tone bands"),
        ModelSpec("conv3d_video", "Conv3D over 4 frames of 8×8 (a digit sliding right) → global pooling → softmax"),
        ModelSpec(
            "bert_tiny",
            "BERT-tiny (2 layers, hidden 32, 2 heads, exact GELU): int64 input_ids + attention_mask, CLS → 4 topics",
            refusals=(GELU_TFJS,),
        ),
        ModelSpec(
            "vit_tiny",
            "ViT-tiny: stride-2 patch Conv2D, class token, position embeddings, 2 exact-GELU blocks, 8×8 digits",
            refusals=(GELU_TFJS,),
        ),
        ModelSpec(
            "keras3_ops",
            "Keras 3 functional model of keras.ops calls (RMS norm, SiLU gate), model.export()",
            keras3=True,
        ),
        ModelSpec(
            "keras3_ops_keras",
            "the keras3_ops model saved as a Keras 3 `.keras` file",
            keras3=True,
            model_file="model.keras",
        ),
        # issue 35: what GPU training produces (builders/gpu.py)
        ModelSpec("mixed_float16_cnn", "CNN trained under mixed_float16 (tf_keras), model.save SavedModel", mixed=True),
        ModelSpec("mixed_bfloat16_cnn", "the same CNN trained under mixed_bfloat16 (tf_keras SavedModel)", mixed=True),
        ModelSpec(
            "keras3_mixed",
            "the same CNN built by Keras 3 under mixed_float16, saved as `.keras`",
            keras3=True,
            model_file="model.keras",
            mixed=True,
        ),
        ModelSpec(
            "gan_generator",
            "GAN-style generator: noise[N,16] → Dense → Conv2DTranspose + BN + LeakyReLU → tanh image 16×16",
            task="regression",
        ),
        ModelSpec(
            "masked_bilstm",
            "Embedding(mask_zero=True) → Bidirectional(LSTM) → softmax over padded int32 token ids",
            recurrent=True,
        ),
        ModelSpec("causal_tcn", "causal TCN: Conv1D(padding='causal') with dilations 1-8 and residual adds, tones"),
        # issue 42: a streaming model, its state kept between calls in resource variables
        ModelSpec(
            "stateful_gru",
            "streaming GRU(32, stateful=True), batch_shape (1, 1, 8): one row of a digit per call, the data one stream",
            recurrent=True,
            refusals=(("tfjs", (r"keeps state", r"explicit input")), ("demo", (r"keeps state", r"explicit input"))),
        ),
        # issue 35: embeddings, image-to-image, keypoint heatmaps, custom Keras classes, labels in the parent folder
        ModelSpec(
            "embedding_metric",
            "CNN → 32-d embedding → UnitNormalization, trained through a cosine classifier; y = digit identity",
            task="embedding",
        ),
        ModelSpec(
            "denoise_autoencoder",
            "conv encoder (stride 2) / upsampling decoder → sigmoid image; noisy 16×16 digits → clean, float y",
            task="image",
        ),
        ModelSpec(
            "keypoint_heatmap",
            "digit pasted in a 16×16 canvas → 2 keypoint heatmaps (its top-left and bottom-right corners)",
            task="heatmap",
        ),
        # issue 42: keypoint labels stored as coordinates, as datasets do
        ModelSpec(
            "keypoint_coords",
            "32×32 2-channel noisy images, a dot per channel → 2 heatmaps 16×16 (stride 2), trained on Gaussian "
            "maps drawn from the (x, y) labels; y = coordinates (n, 2, 2) in input pixels",
            task="keypoints",
        ),
        ModelSpec(
            "custom_class_keras",
            "Keras 3 `.keras` with a registered custom layer (RMSNorm) defined in layers.py beside it",
            keras3=True,
            model_file="model.keras",
            extra_args=("--custom-objects", "{dir}/layers.py", "--trust-model-code"),
        ),
        ModelSpec(
            "labels_in_parent",
            "models/a (10 digits) and models/b (digits 0..2) SavedModels, labels.txt (10) in their parent folder",
            model_file="b",
        ),
        # issue 35: what serving exports and older graphs look like
        ModelSpec(
            "image_bytes",
            "tf.Module: serving_default decodes PNG bytes (string[N]) inside; serving_pixels takes float32 pixels",
            data_signature="serving_pixels",
        ),
        ModelSpec(
            "tabular_preprocessing",
            "dict of named inputs: Normalization, StringLookup (one-hot), IntegerLookup + CategoryEncoding → MLP",
        ),
        ModelSpec("string_labels", "digits CNN whose signature ends in a StaticHashTable: probs + label string[N]"),
        ModelSpec("tf1_compat", "TF1 graph: tf.compat.v1 placeholders + Session, saved with simple_save"),
        # issue 42: models people already have in another form
        ModelSpec(
            "tfmot_qat",
            "CNN fine-tuned quantization-aware with tfmot quantize_model (FakeQuant ops), model.save SavedModel",
            refusals=(("qat", (r"already is one", r"--quant int8")),),
        ),
        ModelSpec(
            "tf1_builder_bn",
            "TF1 graph: conv + batch norm on VariableV2 with Assign in a tf.cond on a training flag, SavedModelBuilder",
            refusals=tuple((c, TF1_REF) for c in ("fp32", "fp16", "dynamic", "int8", "int16x8")),
        ),
        # issue 42: augmentation layers, JAX-backend exports, op libraries: the refused form and its way out
        ModelSpec(
            "keras3_augment",
            "Keras 3 tutorial CNN with data_augmentation (RandomFlip/Rotation/Zoom/Contrast) inside, model.export()",
            keras3=True,
            refusals=(("*", (r"augmentation layers", r"RandomFlip", r"identity\s+at\s+inference", r"training=False")),),
        ),
        ModelSpec(
            "keras3_augment_keras",
            "the keras3_augment model saved as `.keras` (edgetool exports it with training=False)",
            keras3=True,
            model_file="model.keras",
        ),
        ModelSpec(
            "jax_export",
            "Keras 3 CNN (BatchNorm, Dropout) trained on the JAX backend, model.export() (XlaCallModule)",
            keras3=True,
            refusals=(("*", (r"JAX export", r"XlaCallModule")),),
        ),
        ModelSpec(
            "jax_keras",
            "the jax_export model saved as `.keras` (edgetool exports it on the TensorFlow backend)",
            keras3=True,
            model_file="model.keras",
        ),
        ModelSpec(
            "tf_text",
            "string[N,1] → tensorflow-text WhitespaceTokenizer → vocabulary table → Embedding → softmax, tf.Module",
            refusals=(("*", (r"tensorflow-text", r"TFText>")),),
            op_library="tensorflow_text",
        ),
        ModelSpec(
            "tf_text_ids", "the tf_text classifier alone (int64 token ids in), the way out: tokenized in the app"
        ),
        ModelSpec(
            "nms_in_graph",
            "digit in a 16×16 canvas → classes + 4 candidate boxes → tf.image.non_max_suppression keeps one",
            task="detection",
        ),
    )
}
