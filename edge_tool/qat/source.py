"""The model QAT starts from: a tf_keras (Keras 2) model loaded from a SavedModel dir, .h5 or tf_keras .keras file,
and the Keras-2 TensorFlow stack it needs; anything else is refused with what was found and the way out."""

from __future__ import annotations

import os
from pathlib import Path

from edge_tool.core.env import configure_tf_env, import_tf
from edge_tool.errors import ModelError, UsageError
from edge_tool.models.keras_precision import float32_keras_model, is_mixed_keras
from edge_tool.models.signatures import saved_model_flavor
from edge_tool.parsers.keras_archive import check_keras_archive, keras_archive_version
from edge_tool.trust import custom_objects
from edge_tool.trust.guard import require_no_keras_code


def import_stack():
    """(tf, tf_keras, tfmot), with Keras 2 selected before tfmot is imported."""
    configure_tf_env()
    if os.environ.get("TF_USE_LEGACY_KERAS", "").lower() not in ("1", "true"):
        raise UsageError(
            "QAT runs on tf_keras (Keras 2), but TF_USE_LEGACY_KERAS is set to "
            f"{os.environ['TF_USE_LEGACY_KERAS']!r}; unset it or set it to 1."
        )
    tf = import_tf()
    import tensorflow_model_optimization as tfmot
    import tf_keras as keras

    return tf, keras, tfmot


_KERAS3_HINT = (
    "QAT rewrites the model's Keras layers with tfmot, which needs a tf_keras (Keras 2) model. Either re-save "
    "the model with tf_keras (model.save(dir, save_format='tf') or model.save('model.h5')), or use "
    "--quant int8 for full-integer post-training quantization, which works on any SavedModel."
)


def keras3_file_problem(path: Path) -> str | None:
    """Why QAT cannot start from ``path`` when it is a Keras-3 ``.keras`` file — read from the archive's
    metadata.json, without loading the model (that takes seconds) — else None."""
    path = Path(path)
    if not (path.is_file() and path.suffix.lower() == ".keras"):
        return None
    version = keras_archive_version(path)
    if version is None or not version.startswith("3"):
        return None
    return (
        f"--quant qat cannot start from {path}: its metadata.json says Keras {version} (Keras 3) saved it. QAT "
        "rewrites the model's Keras-2 (tf_keras) layers with tfmot, and a Keras-3 file holds none. Re-save the "
        "model with tf_keras (model.save('model.h5') or model.save(dir, save_format='tf')), or use a "
        "post-training mode (--quant int8 for full-integer, or dynamic/fp16), which converts this file as it is."
    )


def check_qat_source(path: Path) -> None:
    """ModelError unless ``path`` is a Keras-2 model whose layers QAT can rewrite; light (reads no weights), so it
    runs before any training data is read and the refusal names the model, not the data."""
    _check_qat_source(Path(path))


def _check_qat_source(path: Path) -> None:
    if not path.exists():
        raise ModelError(
            f"Expected a Keras model (SavedModel directory, .h5 or .keras file) at {path}, but nothing is there."
        )
    if path.is_dir():
        flavor = saved_model_flavor(path)
        if flavor == "keras3-export":
            raise ModelError(
                f"{path} is a Keras 3 export (model.export()): it holds only a serving function, "
                f"no Keras layers, so it cannot be loaded for quantization-aware training. "
                f"{_KERAS3_HINT}"
            )
        if flavor != "keras2":
            raise ModelError(
                f"{path} is a plain TensorFlow SavedModel without Keras metadata "
                f"(keras_metadata.pb), so it cannot be loaded as a Keras model for "
                f"quantization-aware training. {_KERAS3_HINT}"
            )
        return
    suffix = path.suffix.lower()
    if suffix == ".keras":
        check_keras_archive(path)  # ModelError for a zip bomb or a damaged archive, before anything reads it
        if keras_archive_version(path) is None:
            raise ModelError(f"{path} is not a readable .keras archive (zip with metadata.json).")
        problem = keras3_file_problem(path)
        if problem:
            raise ModelError(problem)
    elif suffix not in (".h5", ".hdf5"):
        raise ModelError(
            f"Expected a Keras model for QAT: a Keras-2 SavedModel directory, an .h5 file or a "
            f".keras file saved by tf_keras; got {path}."
        )


def load_keras_for_qat(model_path: Path, trust_model_code: bool = False):
    """Load a tf_keras model for QAT from a Keras-2 SavedModel dir, .h5 or tf_keras .keras file.

    Raises ModelError, naming what was found and what to do, for Keras-3 exports and .keras files, plain
    tf.saved_model modules, missing paths and unreadable files.
    """
    path = Path(model_path)
    _check_qat_source(path)
    require_no_keras_code(
        path, trust_model_code, "Quantization-aware training rewrites its Keras layers and needs a Keras object"
    )
    _, keras, _ = import_stack()
    try:
        model = keras.models.load_model(
            str(path), compile=False, safe_mode=not trust_model_code, custom_objects=custom_objects.active().objects
        )
    except Exception as exc:  # tf_keras raises ValueError/OSError/TypeError/KeyError depending on the format
        raise ModelError(
            f"Could not load {path} as a tf_keras model for QAT: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    if not isinstance(model, keras.Model):
        raise ModelError(f"{path} loaded as {type(model).__name__}, not a Keras model. {_KERAS3_HINT}")
    return _float32_for_qat(model, path)


def _float32_for_qat(model, path: Path):
    """A mixed-precision model rebuilt under the float32 policy with the same weights (tfmot's quantize wrappers
    compute in float32 and fail on float16 tensors); any other model as it is."""
    if not is_mixed_keras(model):
        return model
    try:
        return float32_keras_model(model)
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        raise ModelError(
            f"{path} computes in float16/bfloat16 (a mixed-precision policy), and QAT needs it rebuilt under the "
            f"float32 policy, but Keras could not rebuild it from its config ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}). Re-save the model after "
            "keras.mixed_precision.set_global_policy('float32') (build it again and load the weights), or use "
            "--quant int8, which converts the model's float32 recast."
        ) from None
