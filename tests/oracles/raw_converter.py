"""The baseline every benchmark compares edgetool with: tf.lite.TFLiteConverter set up per mode as documented."""

from __future__ import annotations

from edge_tool.convert.modes import every_mode

MODES = every_mode()  # the registry's modes that need no training data: raw_converter must know each


def raw_converter(tf, saved_model, mode: str, representative_dataset=None, signature: str | None = None):
    """A fresh TFLiteConverter for ``mode`` (int8/int16x8 need ``representative_dataset``)."""
    keys = None if signature is None else [signature]
    conv = tf.lite.TFLiteConverter.from_saved_model(str(saved_model), signature_keys=keys)
    if mode != "fp32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "fp16":
        conv.target_spec.supported_types = [tf.float16]
    if mode in ("int8", "int16x8"):
        conv.representative_dataset = representative_dataset
        ops = tf.lite.OpsSet
        conv.target_spec.supported_ops = [
            ops.TFLITE_BUILTINS_INT8
            if mode == "int8"
            else ops.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
    return conv
