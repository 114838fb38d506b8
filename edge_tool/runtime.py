"""The TFLite interpreter, from the best runtime available: ai_edge_litert -> tflite_runtime -> tf.lite."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import ModelError


def interpreter_class():
    """Return (Interpreter class, runtime name), preferring LiteRT."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # noqa: PLC0415

        return Interpreter, "ai_edge_litert"
    except ImportError:
        pass
    try:
        from tflite_runtime.interpreter import Interpreter  # noqa: PLC0415

        return Interpreter, "tflite_runtime"
    except ImportError:
        pass
    from edge_tool.env import import_tf  # noqa: PLC0415

    return import_tf().lite.Interpreter, "tf.lite"


def load_interpreter(path: Path, num_threads: int | None = None, **kwargs):
    """Load and allocate a ``.tflite`` model; a file that is not a valid flatbuffer raises ModelError."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"Expected a .tflite file at {path}, but {'it is a directory' if path.is_dir() else 'nothing is there'}.")
    cls, _ = interpreter_class()
    try:
        interp = cls(model_path=str(path), num_threads=num_threads, **kwargs)
        interp.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"{path} is not a loadable TFLite model (expected a TFLite flatbuffer): {exc}") from None
    return interp
