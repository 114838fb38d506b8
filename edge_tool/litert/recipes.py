"""The converter recipes edgetool writes once: full-integer int8 setup and where default calibration data lives.

Every int8 build (``--quant int8``, the PTQ side of ``--quant qat``, the demo's fixed-batch LiteRT.js model, the
QuantizationDebugger's calibration for selective int8 and per-layer drift) configures its converter here, so the
files they make come from one recipe. A leaf module: no TensorFlow import (``tf`` is passed in).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_CALIBRATION = "calibration.npz"  # written beside the SavedModel by ``edgetool train``


def configure_full_int8(tf, conv, representative_dataset, io_dtype=None, *, float_fallback: bool = False) -> None:
    """Set ``conv`` up for full-integer int8 (Optimize.DEFAULT, TFLITE_BUILTINS_INT8, the representative data).

    ``io_dtype`` (tf.int8/tf.uint8/tf.float32) sets the inference I/O type; None keeps the model's float I/O.
    ``float_fallback`` also allows float builtins, for the ops the QuantizationDebugger is told to keep in float.
    """
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative_dataset
    ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.target_spec.supported_ops = ops + [tf.lite.OpsSet.TFLITE_BUILTINS] if float_fallback else ops
    if io_dtype is not None:
        conv.inference_input_type = io_dtype
        conv.inference_output_type = io_dtype


def resolve_calibration(model: Path, given: Path | None) -> Path | None:
    """``given`` (--calibration), else calibration.npz inside a SavedModel directory, or beside a .keras/.h5 file
    (in its folder, as labels.txt is found), when it exists, else None."""
    if given is not None:
        return Path(given)
    beside = (Path(model) if Path(model).is_dir() else Path(model).parent) / DEFAULT_CALIBRATION
    return beside if beside.is_file() else None


def missing_calibration_message(needs: str, model: Path) -> str:
    """The one-paragraph error for a build that needs representative data and found none."""
    return (
        f"{needs} needs representative data: pass --calibration DATA (.npz/.npy/image folder/TFRecord/CSV); "
        f"none was given and {model} has no {DEFAULT_CALIBRATION}."
    )
