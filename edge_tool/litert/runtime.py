"""The TFLite interpreter, from the best runtime available: ai_edge_litert -> tflite_runtime -> tf.lite."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration.safe_open import require_regular
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.parsers.limits import check_tflite_file


def interpreter_class(flex: bool = False):
    """Return (Interpreter class, runtime name), preferring LiteRT; with ``flex`` (a file with TF Select ops),
    TensorFlow's tf.lite.Interpreter, which links the Flex delegate (ai_edge_litert and tflite_runtime do not)."""
    if flex:
        return import_tf().lite.Interpreter, "tf.lite (Flex delegate)"
    try:
        from ai_edge_litert.interpreter import Interpreter

        return Interpreter, "ai_edge_litert"
    except ImportError:
        pass
    try:
        from tflite_runtime.interpreter import Interpreter

        return Interpreter, "tflite_runtime"
    except ImportError:
        pass

    return import_tf().lite.Interpreter, "tf.lite"


def load_interpreter(path: Path, num_threads: int | None = None, allocate: bool = True, **kwargs):
    """Load (and with ``allocate``, allocate) a ``.tflite`` model; ModelError for a file that is not a regular file,
    not a valid flatbuffer, or (to be allocated) holds a tensor over the limit (``limits.check_tflite_file``)."""
    path = Path(path)
    if allocate:
        check_tflite_file(path)
    else:
        require_regular(path, "a .tflite file", ModelError)
    cls, _ = interpreter_class()
    try:
        interp = cls(model_path=str(path), num_threads=num_threads, **kwargs)
        if allocate:
            interp.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"{path} is not a loadable TFLite model (expected a TFLite flatbuffer): {exc}") from None
    return interp
