"""One harness for hostile-input cases: run edgetool in a fresh process and pin what it must (not) do.

Every case asserts the exit code, that the message names the offending thing, that no Python traceback
is printed, that nothing outside the expected output changed — the case's working directory and a
private TMPDIR are snapshotted before and after (names, sizes, mtimes) — and that no process started for
the case is still running.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.edgetool_runs import edgetool_process

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """A hostile invocation: ``args`` may contain ``{root}`` (the case's directory), filled in at run time."""

    name: str
    args: tuple[str, ...]
    exit_code: int = 2
    names: tuple[str, ...] = ()  # substrings the combined output must contain (the offending thing)
    absent: tuple[str, ...] = ()  # substrings it must not contain (a library's own warning, say)
    may_create: tuple[str, ...] = ()  # paths (relative to root) the run is allowed to create or change
    env: dict = field(default_factory=dict)
    timeout: float = 600


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every file, dir and symlink under ``roots`` (without following links) → (kind, size, mtime_ns)."""
    seen: dict[str, tuple] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                kind = "link" if p.is_symlink() else ("dir" if p.is_dir() else "file")
                seen[str(p)] = (kind, st.st_size if kind == "file" else 0, st.st_mtime_ns if kind == "file" else 0)
    return seen


def run_case(case: Case, root: Path) -> subprocess.CompletedProcess:
    """Run ``case`` with ``root`` as cwd and a private TMPDIR; assert the hostile-input contract; return the process."""
    tmpdir = root.parent / f"{root.name}-tmp"
    tmpdir.mkdir(exist_ok=True)
    args = [a.format(root=root) for a in case.args]
    env = {**os.environ, "TMPDIR": str(tmpdir), "EDGETOOL_DEBUG": "1", "COLUMNS": "400", **case.env}
    before = snapshot(root, tmpdir)
    proc = edgetool_process(args, env, root, case.timeout)  # a fork of the test server where it can stand in
    out = proc.stdout + proc.stderr
    assert proc.returncode == case.exit_code, f"{case.name}: exit {proc.returncode}\n{out[-4000:]}"
    assert "Traceback (most recent call last)" not in out, f"{case.name}: traceback\n{out[-4000:]}"
    for needle in case.names:
        assert needle.format(root=root) in out, f"{case.name}: message lacks {needle!r}\n{out[-4000:]}"
    for needle in case.absent:
        assert needle not in out, f"{case.name}: output contains {needle!r}\n{out[-4000:]}"
    after = snapshot(root, tmpdir)
    allowed = tuple(str(root / p) for p in case.may_create)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    unexpected = sorted(k for k in changed if not k.startswith(allowed) or not allowed)
    assert not unexpected, f"{case.name}: changed outside the output: {unexpected[:20]}\n{out[-2000:]}"
    stray = leftover_processes(root)
    assert not stray, f"{case.name}: processes still running with the case dir in their command line: {stray}"
    return proc


def leftover_processes(root: Path) -> list[str]:
    """Processes (other than this one) whose command line mentions ``root``: children edgetool failed to end."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if p.pid != os.getpid() and str(root) in cmd and p.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{p.pid}: {cmd[:200]}")
        except (psutil.Error, TypeError):
            continue
    return found
