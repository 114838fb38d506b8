"""Things the tests build once per run: ``built_once`` shares a built directory across pytest-xdist's workers, and
``run_script`` builds a model with a Python snippet in a process of its own (its Keras, its environment)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.edgetool_runs import REPO


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """The directory ``build(dir)`` filled, built once per test run and shared by pytest-xdist's workers.

    Workers take a file lock; the first builds (a marker file says it finished), the others wait and reuse it. A
    failed build leaves no marker, so the next worker that needs it tries again (and fails the same way).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's base directory, above the workers' own
    where, done = base / f"shared-{name}", base / f"shared-{name}.built"  # the marker outside what tests list
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            build(where)
            done.touch()
    return where


def run_script(script: str, *args, legacy_keras: bool = True) -> None:
    """Run the Python ``script`` with ``args`` in a new interpreter in the repository (Keras 2 unless told); assert
    it succeeded."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if legacy_keras else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
