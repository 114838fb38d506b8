"""How a test runs edgetool: the one contract of the suite's three ways, and when each may stand in for the other.

1. ``run_edgetool(*args)``: a process of its own. By default a fork of a server that imported TensorFlow once
   (``tests/zygote.py``), which restores what a fresh ``python -m edge_tool`` has (environment, cwd, argv, streams)
   without paying the import; a new interpreter when the run asks for one (``fresh=True``: the import itself is
   what the test checks, e.g. ``--help``'s laziness or TensorFlow's own output), when its environment differs from
   the server's on a variable read at import (``zygote.READ_AT_IMPORT``), or for every run with
   ``EDGETOOL_TEST_FRESH=1``. Use it where a process of its own matters: exit codes, files left behind, signals,
   TensorFlow state.
2. ``edgetool_process(args, env, cwd, timeout)``: the same with exactly ``env`` and ``cwd`` (the hostile harness).
3. ``edgetool_in_process(*args)``: Typer's CliRunner in the pytest process; same arguments and result shape. It
   refuses an ``env`` that changes a variable read at import (the same list), since it cannot honour it.

``tests/test_run_contract.py`` runs real commands forked, fresh and in process and compares exit codes, output
and the files written, so a fork that stops behaving like a fresh process fails a test instead of hiding a bug.
Every run gets ``EDGETOOL_DEBUG=1`` (internal errors raise with their traceback, not the one-line exit 70) and
runs with the repository as its working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from edge_tool.cli import app
from tests import zygote

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Internal errors raise with their traceback (not the one-line exit 70 users see), in this process and in every
# edgetool subprocess the tests start, so no bug hides behind the CLI edge's guard.
os.environ["EDGETOOL_DEBUG"] = "1"

REPO = Path(__file__).resolve().parents[1]
# Every Python child the tests start imports edge_tool from this checkout (the one these tests lie in), not from an
# editable install of another checkout (a worktree's tests would run main's code); tests/zygote.py does the same.
_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO)]
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *_PATH])
ZYGOTE = zygote.shared()


def zygote_wanted(env: dict) -> bool:
    """True when a run with the full environment ``env`` may be a fork of the test server."""
    return os.environ.get("EDGETOOL_TEST_FRESH", "") in ("", "0") and ZYGOTE.usable_for(env)


def run_edgetool(
    *args: str, timeout: float = 900, env: dict | None = None, fresh: bool = False
) -> subprocess.CompletedProcess:
    """Run ``python -m edge_tool ARGS`` in a process of its own (fresh TF state) in the repository; return it.

    ``env`` is added to this process's environment. ``fresh=True`` starts a new interpreter (for what a fork of the
    test server cannot show: the import's own output, which modules a command imports); otherwise the run is a fork.
    """
    return edgetool_process([str(a) for a in args], {**os.environ, **(env or {})}, REPO, timeout, fresh)


def edgetool_process(
    args: list[str], env: dict, cwd: Path, timeout: float, fresh: bool = False
) -> subprocess.CompletedProcess:
    """``python -m edge_tool ARGS`` with exactly ``env``, in ``cwd``: a fork of the test server when it can stand in
    for a fresh process (``zygote_wanted``), else a new interpreter."""
    if not fresh and zygote_wanted(env):
        return ZYGOTE.run(args, env, cwd, timeout)
    return subprocess.run(
        [sys.executable, "-m", "edge_tool", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def edgetool_in_process(*args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``edgetool ARGS`` in this process (Typer's CliRunner); same arguments and result shape as ``run_edgetool``.

    Saves the seconds of TensorFlow's import a fresh process pays. stdout/stderr hold what edgetool prints (rich
    and typer write to the swapped sys.stdout/sys.stderr) followed by what reached file descriptors 1 and 2
    meanwhile (TensorFlow's C++ log lines, edgetool's child processes). It does not see Python warnings (pytest
    records them) nor TensorFlow's import-time lines (imported once). So keep ``run_edgetool`` where a test
    pins the absence of such output, a signal, closed stdio, ``--help``'s laziness, process state, or needs an
    environment variable read at import (``env`` here refuses those). ``timeout`` is accepted for the same
    signature and not enforced. An internal error is raised here with its traceback (EDGETOOL_DEBUG=1).
    """
    late = zygote.differs_at_import({**os.environ, **(env or {})}, dict(os.environ))
    if late:
        raise ValueError(f"{late} are read at import time; use run_edgetool for this run")
    cwd = os.getcwd()
    with tempfile.TemporaryFile() as fd1, tempfile.TemporaryFile() as fd2:
        saved = os.dup(1), os.dup(2)
        os.chdir(REPO)  # as run_edgetool's cwd, for relative paths
        os.dup2(fd1.fileno(), 1)
        os.dup2(fd2.fileno(), 2)
        try:
            result = CliRunner().invoke(app, [str(a) for a in args], env=env)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            os.chdir(cwd)
        raw = []
        for f in (fd1, fd2):
            f.seek(0)
            raw.append(f.read().decode("utf-8", "replace"))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception.with_traceback(result.exc_info[2])
    return subprocess.CompletedProcess(
        ["edgetool", *map(str, args)], result.exit_code, result.stdout + raw[0], result.stderr + raw[1]
    )
