"""Outputs that cannot be lost in a race, and temp files a killed run cannot leave behind forever.

Races are made deterministic with the test hook EDGETOOL_TEST_PAUSE_BEFORE_SWAP=GATE: the run writes
GATE.waiting when its output is complete and waits for GATE before the final swap, so the test acts exactly in
that window (create a folder at -o, run a second convert, SIGKILL it), then creates GATE. Every run is a real
``python -m edge_tool`` with the case's private TMPDIR, checked as the hostile harness checks: exit code, the
offending path named, no traceback, nothing else changed, no process left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.core_fixtures import case_root, flat_artifacts  # noqa: F401 (fixtures)
from tests.hostile.harness import Case, leftover_processes, run_case, snapshot

CONVERT = ("convert", "{root}/model", "--format", "tflite", "--quant", "fp32")
DEMO = ("demo", "{root}/tfjs")
WAIT_S = 600.0


class Paused:
    """A run started with the pause hook; ``wait_in_window`` blocks until it is about to swap."""

    def __init__(self, args: tuple[str, ...], root: Path, gate: Path):
        self.root, self.gate = root, gate
        env = {
            **os.environ,
            "TMPDIR": str(tmpdir_of(root)),
            "EDGETOOL_DEBUG": "1",
            "COLUMNS": "400",
            "EDGETOOL_TEST_PAUSE_BEFORE_SWAP": str(gate),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "edge_tool", *(a.format(root=root) for a in args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=root,
        )

    def wait_in_window(self) -> None:
        deadline = time.monotonic() + WAIT_S
        while not Path(f"{self.gate}.waiting").exists():
            assert self.proc.poll() is None, f"the run ended before its swap:\n{self.proc.stdout.read()}"
            assert time.monotonic() < deadline, "the run never reached its swap"
            time.sleep(0.1)

    def release(self) -> tuple[int, str]:
        self.gate.write_text("go")
        out, _ = self.proc.communicate(timeout=WAIT_S)
        assert "Traceback (most recent call last)" not in out, out
        return self.proc.returncode, out


def _without_temp(snap: dict) -> dict:
    return {k: v for k, v in snap.items() if ".tmp-" not in k}


def run_plain(args: tuple[str, ...], root: Path) -> tuple[int, str]:
    env = {**os.environ, "TMPDIR": str(tmpdir_of(root)), "EDGETOOL_DEBUG": "1", "COLUMNS": "400"}
    proc = subprocess.run(
        [sys.executable, "-m", "edge_tool", *(a.format(root=root) for a in args)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def paused(case_root, tmp_path):
    """Start runs with the pause hook; any still running at the end of the test is killed."""
    runs: list[Paused] = []

    def start(args: tuple[str, ...]) -> Paused:
        runs.append(Paused(args, case_root, tmp_path / f"gate{len(runs)}"))
        return runs[-1]

    yield start
    for run in runs:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.communicate()


def tmpdir_of(root: Path) -> Path:
    path = root.parent / f"{root.name}-tmp"  # the harness's private TMPDIR for the case
    path.mkdir(exist_ok=True)
    return path


def leftovers(root: Path) -> list[str]:
    """Temp names beside outputs in ``root`` and anything edgetool left in the case's TMPDIR."""
    beside = [p.name for p in root.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    return beside + [p.name for p in tmpdir_of(root).iterdir()]


@pytest.mark.parametrize("force", [False, True])
def test_a_user_folder_appearing_at_o_during_convert_is_never_touched(case_root, paused, force):
    run = paused((*CONVERT, "-o", "{root}/out", *(["--force"] if force else [])))
    run.wait_in_window()
    (case_root / "out").mkdir()
    (case_root / "out" / "notes.txt").write_text("the user's own notes")
    before = _without_temp(snapshot(case_root))
    code, out = run.release()
    assert code == 2, out
    assert f"{case_root}/out" in out and "while this run was working" in out
    assert snapshot(case_root) == before  # the whole case tree, the user's folder included
    assert (case_root / "out" / "notes.txt").read_text() == "the user's own notes"
    assert leftovers(case_root) == [] and not leftover_processes(case_root)


def test_two_runs_into_the_same_new_o_the_later_fails_naming_the_path(case_root, paused):
    first = paused((*CONVERT, "-o", "{root}/out"))
    first.wait_in_window()
    code, out = run_plain((*CONVERT, "-o", "{root}/out"), case_root)
    assert code == 0 and "Traceback" not in out, out
    before = snapshot(case_root / "out")
    code, out = first.release()
    assert code == 2 and f"{case_root}/out" in out, out
    assert snapshot(case_root / "out") == before  # the second run's output, untouched
    assert leftovers(case_root) == [] and not leftover_processes(case_root)


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_force_replaces_an_edgetool_output_that_appeared_meanwhile(case_root, paused):
    first = paused((*CONVERT, "-o", "{root}/out", "--force"))
    first.wait_in_window()
    code, out = run_plain((*CONVERT, "-o", "{root}/out"), case_root)
    assert code == 0, out
    old_manifest = (case_root / "out" / "manifest.json").read_text()
    code, out = first.release()
    assert code == 0, out
    assert (case_root / "out" / "manifest.json").read_text() != old_manifest  # the later run won, as --force says
    assert leftovers(case_root) == []


def test_o_symlink_force_replaces_the_target_and_keeps_the_link(case_root):
    run_case(Case("first", (*CONVERT, "-o", "{root}/runs/a"), exit_code=0, may_create=("runs",)), case_root)
    os.symlink("runs/a", case_root / "latest")
    old = (case_root / "runs" / "a" / "manifest.json").read_text()
    run_case(
        Case("via-link", (*CONVERT, "-o", "{root}/latest", "--force"), exit_code=0, may_create=("runs/a",)), case_root
    )
    assert os.readlink(case_root / "latest") == "runs/a"  # still the user's link
    assert (case_root / "runs" / "a" / "manifest.json").read_text() != old
    assert sorted(p.name for p in (case_root / "runs").iterdir()) == ["a"]  # no .a.old-* / .a.tmp-*
    assert leftovers(case_root) == []


def test_o_dangling_symlink_is_refused(case_root):
    os.symlink("nowhere/out", case_root / "dangling")
    run_case(
        Case("dangling", (*CONVERT, "-o", "{root}/dangling", "--force"), names=("{root}/dangling", "does not exist")),
        case_root,
    )


@pytest.mark.slow  # not in the quick tier (its measured cost)
@pytest.mark.parametrize("args", [CONVERT, DEMO], ids=["convert", "demo"])
def test_sigkill_in_the_window_then_the_next_run_sweeps_its_temp_files(case_root, paused, args):
    run = paused((*args, "-o", "{root}/out"))
    run.wait_in_window()
    stale = leftovers(case_root)
    assert any(n.startswith(".out.tmp-") for n in stale) and any(n.startswith("edgetool-run-") for n in stale), stale
    if args is CONVERT:  # the converter's own temp files sit in the run's dir
        inner = [p.name for d in tmpdir_of(case_root).iterdir() for p in d.iterdir()]
        assert any(n.startswith("edgetool-src-") for n in inner) and any(
            n.startswith("edgetool-native-") for n in inner
        ), inner
    run.proc.send_signal(signal.SIGKILL)
    run.proc.communicate(timeout=60)
    assert leftovers(case_root) == stale  # a SIGKILL cleans nothing
    before = {k: v for k, v in snapshot(case_root).items() if "/out" not in k and ".out.tmp-" not in k}
    code, out = run_plain((*args, "-o", "{root}/out"), case_root)  # not run_case: sweeping changes TMPDIR
    assert code == 0 and "Traceback" not in out, out
    assert leftovers(case_root) == [] and not leftover_processes(case_root)
    assert {k: v for k, v in snapshot(case_root).items() if "/out" not in k} == before
    assert (case_root / "out" / ".edgetool-output").is_file()


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_a_live_runs_temp_files_are_never_swept(case_root, paused):
    first = paused((*CONVERT, "-o", "{root}/out"))
    first.wait_in_window()
    live = leftovers(case_root)
    code, out = run_plain((*CONVERT, "-o", "{root}/out2"), case_root)
    assert code == 0, out
    assert leftovers(case_root) == live  # the other run swept nothing of the live one
    code, out = first.release()
    assert code == 0, out
    assert (case_root / "out" / "manifest.json").is_file() and leftovers(case_root) == []


def test_an_eval_report_appearing_meanwhile_is_not_replaced_without_force(case_root, paused):
    args = (
        "eval",
        "{root}/flat.tflite",
        "-r",
        "{root}/model",
        "-d",
        "{root}/model/eval.npz",
        "--runs",
        "1",
        "--json",
        "{root}/report.json",
    )
    run = paused(args)
    run.wait_in_window()
    (case_root / "report.json").write_text("the user's own report")
    code, out = run.release()
    assert code == 2 and f"{case_root}/report.json" in out, out
    assert (case_root / "report.json").read_text() == "the user's own report"
    assert leftovers(case_root) == []
