"""Process-wide TensorFlow settings: they live in ``calibration.tfenv`` (the calibration package reads TFRecords
with TensorFlow and imports nothing from edge_tool); edgetool uses them through this module."""

from __future__ import annotations

import importlib.metadata

from edge_tool.calibration.tfenv import configure_tf_env, import_tf, quiet_native_stderr

__all__ = ["configure_tf_env", "import_tf", "installed_version", "quiet_native_stderr"]


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (e.g. "ai-edge-litert"), or None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
