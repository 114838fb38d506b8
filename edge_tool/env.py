"""Process-wide settings applied before TensorFlow is imported."""

from __future__ import annotations

import os


def configure_tf_env() -> None:
    """Select Keras 2 (tf_keras) and quiet TensorFlow's C++ logging; call before importing tensorflow."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def import_tf():
    """Import TensorFlow with edgetool's environment settings and return the module."""
    configure_tf_env()
    import tensorflow as tf  # noqa: PLC0415  (heavy import kept out of module load)

    tf.get_logger().setLevel("ERROR")
    return tf
