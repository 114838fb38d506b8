"""Process-wide settings applied before TensorFlow is imported, and the one way to import it.

Shared by edgetool (``edge_tool.core.env`` re-exports these) and the calibration package's TFRecord reader, so
TensorFlow gets the same settings whichever of them imports it first.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path


def verbose() -> bool:
    """EDGETOOL_VERBOSE is set (to anything but empty or 0): show the libraries' own log lines and warnings."""
    return os.environ.get("EDGETOOL_VERBOSE", "") not in ("", "0")


# Python warnings the libraries print on every run that say nothing about the user's model or data.
_LIBRARY_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def quiet_library_warnings() -> None:
    """Hide the libraries' deprecation warnings (and tf.lite.Interpreter's, a UserWarning) unless verbose."""
    if verbose():
        return
    for category in _LIBRARY_WARNINGS:
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", message=r"(?s).*tf\.lite\.Interpreter is deprecated")


def configure_tf_env() -> None:
    """Select Keras 2 (tf_keras) and quiet TensorFlow's C++ logging and the libraries' deprecation warnings (all
    shown with EDGETOOL_VERBOSE=1); call before importing tensorflow."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0" if verbose() else "3")
    quiet_library_warnings()


def import_tf():
    """Import TensorFlow with these environment settings (quietly) and return the module."""
    configure_tf_env()
    if "tensorflow" not in sys.modules:
        with quiet_native_stderr():  # CUDA/XLA registration noise is printed by C++ during the import
            import tensorflow  # noqa: F401
    import tensorflow as tf

    tf.get_logger().setLevel("INFO" if verbose() else "ERROR")
    return tf


_quiet_depth = 0


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[Path]:
    """Send C++ log noise (TF/XLA/MLIR, written to fd 2) to a temp file; Python's sys.stderr keeps the terminal.

    Yields the log file's path (readable until the block exits). Errors still reach the user: the converter
    raises them as Python exceptions, which edgetool turns into messages.
    """
    global _quiet_depth
    if verbose() or _quiet_depth:  # verbose, or already inside a quiet block
        yield Path(os.devnull)
        return
    _quiet_depth += 1
    sys.stderr.flush()
    saved = os.dup(2)
    py_stderr = sys.stderr
    with tempfile.NamedTemporaryFile(prefix="edgetool-native-", suffix=".log") as log:
        os.dup2(log.fileno(), 2)
        sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1)
        try:
            yield Path(log.name)
        finally:
            _quiet_depth -= 1
            sys.stderr.flush()
            sys.stderr.close()
            sys.stderr = py_stderr
            os.dup2(saved, 2)
            os.close(saved)
