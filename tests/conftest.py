"""Shared fixtures: real models trained by edgetool itself, kept tiny so the suite stays fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[1]


def run_edgetool(*args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m edge_tool ARGS`` in a fresh process (fresh TF state); return the completed process."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "edge_tool", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO,
    )


@pytest.fixture(scope="session")
def digits_model(tmp_path_factory) -> Path:
    """Keras-2 SavedModel of the digits CNN trained under MirroredStrategy (2 CPU replicas), with sidecars."""
    out = tmp_path_factory.mktemp("digits") / "model"
    proc = run_edgetool("train", "--strategy", "mirrored", "--replicas", "2", "--epochs", "8", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out
