"""qat: quantization-aware fine-tuning of a tf_keras model with tfmot, then full-integer int8 TFLite.

Pipeline (each step exists because the naive ``quantize_model`` route fails or loses accuracy on real models):

1. load the Keras-2 model (SavedModel dir, .h5, or tf_keras .keras); Keras-3 exports are refused clearly;
2. rebuild it as a clean functional graph with BatchNorm folded into the preceding conv/dense and the input
   Rescaling folded into the first conv (``qat_support.folding``), so fake-quant sees the weights TFLite will use
   (and tfmot never meets the Conv2D -> BatchNorm pair it cannot handle);
3. annotate every layer tfmot supports and ``quantize_apply`` (``qat_support.annotate``);
4. fine-tune briefly (3 epochs, Adam, peak 1e-4 cosine-decayed to 0) under the requested strategy, on targets
   mixing the labels with the float model's own probabilities (distillation keeps the int8 model close to it);
5. convert with TFLITE_BUILTINS_INT8 + a representative dataset, so any layer tfmot could not annotate is still
   calibrated to int8: the result is full-integer.
"""

from __future__ import annotations

import math
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from edge_tool.errors import ConversionError, DataError, ModelError, UsageError, collect_and_raise

STRATEGIES = ("default", "one-device", "mirrored")
IO_TYPES = ("float32", "int8", "uint8")


@dataclass(frozen=True)
class QatOptions:
    """How to fine-tune: epochs, global batch, peak learning rate (cosine-decayed), strategy, seed, and how much
    the targets lean on the float model's own predictions (distillation) rather than the labels."""

    epochs: int = 3
    batch_size: int = 64
    learning_rate: float = 1e-4
    strategy: str = "default"
    replicas: int = 2
    seed: int = 0
    distillation: float = 0.5  # weight of the float model's own probabilities in the targets (rest: labels)

    def __post_init__(self) -> None:
        strategy = getattr(self.strategy, "value", self.strategy)
        object.__setattr__(self, "strategy", str(strategy))
        problems = []
        if self.epochs < 1:
            problems.append(f"QAT epochs must be >= 1, got {self.epochs}.")
        if self.batch_size < 1:
            problems.append(f"QAT batch size must be >= 1, got {self.batch_size}.")
        if not self.learning_rate > 0:
            problems.append(f"QAT learning rate must be > 0, got {self.learning_rate}.")
        if self.strategy not in STRATEGIES:
            problems.append(f"QAT strategy must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}.")
        if not 0.0 <= self.distillation <= 1.0:
            problems.append(f"QAT distillation weight must be in [0, 1], got {self.distillation}.")
        if self.replicas < 1:
            problems.append(f"QAT replicas must be >= 1, got {self.replicas}.")
        collect_and_raise(problems, UsageError, "Invalid QAT options:")


def _import_stack():
    """(tf, tf_keras, tfmot), with Keras 2 selected before tfmot is imported."""
    from edge_tool.env import configure_tf_env, import_tf  # noqa: PLC0415

    configure_tf_env()
    if os.environ.get("TF_USE_LEGACY_KERAS", "").lower() not in ("1", "true"):
        raise UsageError(
            "QAT runs on tf_keras (Keras 2), but TF_USE_LEGACY_KERAS is set to "
            f"{os.environ['TF_USE_LEGACY_KERAS']!r}; unset it or set it to 1."
        )
    tf = import_tf()
    import tensorflow_model_optimization as tfmot  # noqa: PLC0415
    import tf_keras as keras  # noqa: PLC0415

    return tf, keras, tfmot


_KERAS3_HINT = (
    "QAT rewrites the model's Keras layers with tfmot, which needs a tf_keras (Keras 2) model. Either re-save "
    "the model with tf_keras (model.save(dir, save_format='tf') or model.save('model.h5')), or use "
    "--quant int8 for full-integer post-training quantization, which works on any SavedModel."
)


def _keras_file_version(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as zf:
            import json  # noqa: PLC0415

            return str(json.loads(zf.read("metadata.json")).get("keras_version", ""))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError):
        return None


def _check_qat_source(path: Path) -> None:
    from edge_tool.modelio import saved_model_flavor  # noqa: PLC0415

    if not path.exists():
        raise ModelError(f"Expected a Keras model (SavedModel directory, .h5 or .keras file) at {path}, "
                         "but nothing is there.")
    if path.is_dir():
        flavor = saved_model_flavor(path)
        if flavor == "keras3-export":
            raise ModelError(f"{path} is a Keras 3 export (model.export()): it holds only a serving function, "
                             f"no Keras layers, so it cannot be loaded for quantization-aware training. "
                             f"{_KERAS3_HINT}")
        if flavor != "keras2":
            raise ModelError(f"{path} is a plain TensorFlow SavedModel without Keras metadata "
                             f"(keras_metadata.pb), so it cannot be loaded as a Keras model for "
                             f"quantization-aware training. {_KERAS3_HINT}")
        return
    suffix = path.suffix.lower()
    if suffix == ".keras":
        version = _keras_file_version(path)
        if version is None:
            raise ModelError(f"{path} is not a readable .keras archive (zip with metadata.json).")
        if version.startswith("3"):
            raise ModelError(f"{path} was saved by Keras {version} (Keras 3). {_KERAS3_HINT}")
    elif suffix not in (".h5", ".hdf5"):
        raise ModelError(f"Expected a Keras model for QAT: a Keras-2 SavedModel directory, an .h5 file or a "
                         f".keras file saved by tf_keras; got {path}.")


def load_keras_for_qat(model_path: Path):
    """Load a tf_keras model for QAT from a Keras-2 SavedModel dir, .h5 or tf_keras .keras file.

    Raises ModelError, naming what was found and what to do, for Keras-3 exports and .keras files, plain
    tf.saved_model modules, missing paths and unreadable files.
    """
    path = Path(model_path)
    _check_qat_source(path)
    _, keras, _ = _import_stack()
    try:
        model = keras.models.load_model(str(path), compile=False)
    except Exception as exc:  # tf_keras raises ValueError/OSError/TypeError/KeyError depending on the format
        raise ModelError(f"Could not load {path} as a tf_keras model for QAT: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    if not isinstance(model, keras.Model):
        raise ModelError(f"{path} loaded as {type(model).__name__}, not a Keras model. {_KERAS3_HINT}")
    return model


def _check_train_data(model, x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    y = np.asarray(y)
    expected = tuple(model.inputs[0].shape[1:])
    n_classes = int(model.outputs[0].shape[-1])
    problems = []
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        problems.append(f"QAT supports single-input, single-output models; this one has "
                        f"{len(model.inputs)} input(s) and {len(model.outputs)} output(s).")
    if x.ndim != len(expected) + 1 or any(e is not None and e != s for e, s in zip(expected, x.shape[1:])):
        problems.append(f"training x must have shape (n, {', '.join(map(str, expected))}); got {x.shape}.")
    if len(x) != len(y):
        problems.append(f"training x and y differ in length: {len(x)} vs {len(y)}.")
    if len(x) == 0:
        problems.append("training data is empty.")
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or (y.size and (y.min() < 0 or y.max() >= n_classes)):
        problems.append(f"training y must be integer class ids in 0..{n_classes - 1} with shape (n,); got "
                        f"dtype {y.dtype}, shape {y.shape}"
                        + (f", range {y.min()}..{y.max()}." if y.size and y.ndim == 1 else "."))
    collect_and_raise(problems, DataError, "Training data does not fit the model for QAT:")
    return x.astype(model.inputs[0].dtype.as_numpy_dtype), y.astype(np.int64)


def _targets(float_model, x, y, alpha: float):
    """Training targets: ``alpha`` x the float model's own probabilities + (1 - alpha) x one-hot labels.

    Distilling from the float model keeps fine-tuning anchored to what the quantized model should
    reproduce, instead of drifting on a training set the float model already fits.
    """
    layer = float_model.get_layer(float_model.output_names[0])
    probs = type(layer).__name__ == "Softmax" or \
        getattr(getattr(layer, "activation", None), "__name__", "") == "softmax"
    out = np.concatenate([np.asarray(float_model(x[i:i + 256], training=False)) for i in range(0, len(x), 256)])
    if not probs:
        out = np.exp(out - out.max(axis=1, keepdims=True))
        out /= out.sum(axis=1, keepdims=True)
    onehot = np.eye(out.shape[1], dtype=np.float32)[y]
    return (alpha * out + (1.0 - alpha) * onehot).astype(np.float32), not probs


def build_qat_model(keras, tfmot, source):
    """Fold, annotate and quantize_apply ``source``; returns (qat model, folded float model, notes)."""
    from edge_tool.convert.qat_support.folding import fold_model  # noqa: PLC0415
    from edge_tool.convert.qat_support.annotate import annotate_supported  # noqa: PLC0415

    folded, folds = fold_model(keras, source)
    annotated, skipped = annotate_supported(keras, tfmot, folded)
    try:
        with tfmot.quantization.keras.quantize_scope():
            qat = tfmot.quantization.keras.quantize_apply(annotated)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise ConversionError(f"tfmot could not make the model quantization-aware: {exc}") from None
    return qat, folded, {"folded": folds, "float_layers": skipped}


def _epoch_callback(keras, progress: Callable | None):
    class Progress(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if progress is not None:
                progress(int(epoch), {k: float(v) for k, v in (logs or {}).items()})

    return Progress()


def quantization_aware_model(model_path: Path, x_train, y_train, options: QatOptions = QatOptions(),
                             progress: Callable | None = None):
    """Load ``model_path``, make it quantization-aware and fine-tune it on (x_train, y_train).

    Returns the fine-tuned tfmot model (tf_keras). ``progress(epoch, logs)`` is called after each epoch
    (epoch counts from 0; logs hold floats such as loss and accuracy). The model carries a plain attribute
    ``edgetool_qat_notes`` = {"folded": ["bn1 -> conv1", ...], "float_layers": [names tfmot left float]}.
    """
    from edge_tool.training.config import Strategy  # noqa: PLC0415
    from edge_tool.training.data import make_dataset  # noqa: PLC0415
    from edge_tool.training.strategies import build_local_strategy  # noqa: PLC0415

    tf, keras, tfmot = _import_stack()
    strategy = build_local_strategy(tf, Strategy(options.strategy), options.replicas)  # before TF initialises
    keras.utils.set_random_seed(options.seed)
    with strategy.scope():
        source = load_keras_for_qat(model_path)
        x, y = _check_train_data(source, x_train, y_train)
        qat, folded, notes = build_qat_model(keras, tfmot, source)
        targets, from_logits = _targets(folded, x, y, options.distillation)
        steps = options.epochs * math.ceil(len(x) / options.batch_size)
        schedule = keras.optimizers.schedules.CosineDecay(options.learning_rate, steps)
        qat.compile(optimizer=keras.optimizers.Adam(schedule),
                    loss=keras.losses.CategoricalCrossentropy(from_logits=from_logits),
                    metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")])
    qat.__dict__["edgetool_qat_notes"] = notes  # plain attribute: not tracked, not saved
    ds = make_dataset(tf, x, targets, options.batch_size, options.seed, training=True)
    qat.fit(ds, epochs=options.epochs, verbose=0, callbacks=[_epoch_callback(keras, progress)])
    return qat


def _serving_module(tf, qat_model):
    """A tf.Module whose serving signature keeps the original input/output names (not tfmot's quant_*)."""
    if len(qat_model.inputs) != 1:
        raise ConversionError(f"QAT conversion supports one model input; got {len(qat_model.inputs)}.")
    inp = qat_model.inputs[0]
    in_name = qat_model.input_names[0]
    out_names = [getattr(l, "layer", l).name for l in (qat_model.get_layer(n) for n in qat_model.output_names)]

    @tf.function(input_signature=[tf.TensorSpec(inp.shape, inp.dtype, name=in_name)])
    def serve(x):
        outs = qat_model(x, training=False)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return dict(zip(out_names, outs))

    module = tf.Module()
    module.model = qat_model
    module.serve = serve
    return module, serve


def qat_to_tflite(qat_model, representative_dataset, io_type: str = "float32") -> bytes:
    """Convert a fine-tuned QAT model to full-integer int8 TFLite (TFLITE_BUILTINS_INT8 only).

    ``representative_dataset`` yields ``[batch-1 float32 array]`` lists; it calibrates any op tfmot left float.
    ``io_type`` "float32" keeps float input/output; "int8"/"uint8" makes the I/O integer too.
    """
    if io_type not in IO_TYPES:
        raise UsageError(f"QAT io_type must be one of {', '.join(IO_TYPES)}; got {io_type!r}.")
    if representative_dataset is None:
        raise UsageError("QAT conversion to full-integer int8 needs a representative dataset (calibration data).")
    tf, _, _ = _import_stack()
    module, serve = _serving_module(tf, qat_model)
    with tempfile.TemporaryDirectory(prefix="edgetool-qat-") as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_default": serve.get_concrete_function()})
        conv = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=["serving_default"])
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = representative_dataset
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if io_type != "float32":
            conv.inference_input_type = conv.inference_output_type = getattr(tf, io_type)
        try:
            return bytes(conv.convert())
        except Exception as exc:  # the converter raises ConverterError / RuntimeError with MLIR diagnostics
            raise ConversionError(f"Full-integer int8 conversion of the QAT model failed: {exc}") from None
