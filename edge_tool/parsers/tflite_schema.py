"""The TFLite flatbuffer schema: its generated classes (LiteRT's, else TensorFlow's), the names of its enums, and
whether a tensor is a constant. No numpy, so the checks that run before any loader (``limits``,
``tflite_indices``) import it at no cost."""

from __future__ import annotations

from edge_tool.core.env import configure_tf_env


def tflite_schema():
    """The flatbuffer classes of the TFLite schema (``Model``, ``ModelT``, ``TensorType``, ``BuiltinOperator``, …):
    ai_edge_litert's generated module, or TensorFlow's when LiteRT is not installed."""
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        configure_tf_env()
        from tensorflow.lite.python import schema_py_generated as schema
    return schema


def enum_names(enum_cls) -> dict[int, str]:
    """Value → name of a generated schema enum class (``TensorType``, ``BuiltinOperator``, …)."""
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_") and isinstance(v, int)}


def is_constant(model, tensor) -> bool:
    """True when ``tensor`` has data in its buffer: a weight/constant, not a tensor computed at run time (model
    inputs, operator outputs and variable tensors have empty buffers).

    Takes the object API's ``ModelT``/``TensorT`` or the lazy accessors' ``Model``/``Tensor`` (which read a
    damaged or huge file without unpacking it).
    """
    if hasattr(model, "buffers"):
        buf = model.buffers[tensor.buffer] if tensor.buffer < len(model.buffers) else None
        return buf is not None and ((buf.data is not None and len(buf.data) > 0) or (buf.offset or 0) > 1)
    index = tensor.Buffer()
    if index >= model.BuffersLength():
        return False
    buf = model.Buffers(index)
    return buf.DataLength() > 0 or buf.Offset() > 1  # offset > 1: data stored after the flatbuffer (models > 2 GB)
