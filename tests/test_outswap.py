"""The final swap of an output (``outswap``) and the sweep of dead runs' temp names (``scratch``), on the real file
system: with renameat2 (this Linux has it) and with the fallback a system without it uses."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from edge_tool.core import outswap, scratch
from edge_tool.core.fsutil import MARKER, atomic_dir, atomic_file, has_marker
from edge_tool.errors import UsageError


@pytest.fixture(params=["renameat2", "fallback"])
def swap_mode(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.setattr(outswap, "_RENAMEAT2", None)
    return request.param


def _built(parent: Path, text: str = "new") -> Path:
    tmp = parent / f".out.tmp-{scratch.run_token()}-abc"
    tmp.mkdir()
    (tmp / "model.tflite").write_text(text)
    (tmp / MARKER).write_text("x")
    return tmp


def test_renameat2_is_available_on_this_linux():
    assert outswap._RENAMEAT2 is not None  # so the primary path is what the other tests run


def test_into_nothing_and_over_an_empty_dir(tmp_path, swap_mode):
    outswap.install_dir(_built(tmp_path), tmp_path / "out", False, has_marker)
    (tmp_path / "empty").mkdir()
    outswap.install_dir(_built(tmp_path), tmp_path / "empty", False, has_marker)
    assert (tmp_path / "out" / "model.tflite").read_text() == (tmp_path / "empty" / "model.tflite").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "out"]


@pytest.mark.parametrize("force", [False, True])
def test_a_users_folder_is_never_replaced(tmp_path, swap_mode, force):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    tmp = _built(tmp_path)
    with pytest.raises(UsageError, match="while this run was working"):
        outswap.install_dir(tmp, tmp_path / "out", force, has_marker)
    assert os.listdir(tmp_path / "out") == ["notes.txt"] and (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert tmp.is_dir()  # the caller (atomic_dir) removes its own temp dir


def test_an_edgetool_output_is_replaced_only_with_force(tmp_path, swap_mode):
    outswap.install_dir(_built(tmp_path, "old"), tmp_path / "out", False, has_marker)
    with pytest.raises(UsageError, match="without --force"):
        outswap.install_dir(_built(tmp_path), tmp_path / "out", False, has_marker)
    for p in tmp_path.glob(".out.tmp-*"):
        os.rename(p, tmp_path / "kept")  # the refused run's temp dir, out of the way
    outswap.install_dir(_built(tmp_path), tmp_path / "out", True, has_marker)
    assert (tmp_path / "out" / "model.tflite").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "out"]  # no .out.old-* / .out.tmp-* left


def test_a_file_is_not_replaced_without_force(tmp_path, swap_mode):
    tmp = tmp_path / ".r.json.tmp-x"
    tmp.write_text("new")
    (tmp_path / "r.json").write_text("mine")
    with pytest.raises(UsageError, match="without --force"):
        outswap.install_file(tmp, tmp_path / "r.json", False)
    assert (tmp_path / "r.json").read_text() == "mine"
    outswap.install_file(tmp, tmp_path / "r.json", True)
    assert (tmp_path / "r.json").read_text() == "new" and not tmp.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_only_dead_runs_names(tmp_path):
    boot = scratch._BOOT
    other_boot = "0123abcd" if boot != "0123abcd" else "fedc3210"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            f".out.tmp-{_dead_pid()}-123-{boot}-aa": False,  # dead process
            f".out.tmp-{os.getpid()}-1-{boot}-bb": False,  # our PID, another start: reused
            f".out.old-{_dead_pid()}-5-{boot}": False,
            f".out.tmp-{scratch.run_token()}-cc": True,  # this run
            f".out.tmp-{scratch.run_token(sleeper.pid)}-dd": True,  # another live run
            f".out.tmp-{_dead_pid()}-9-{other_boot}-ee": True,  # another boot, recent
            f".old.tmp-{_dead_pid()}-9-{other_boot}-ff": False,  # another boot, two days old
            ".out.tmp-12ab": True,  # not our naming: never ours
            "out": True,
        }
        for name in names:
            (tmp_path / name).mkdir()
            (tmp_path / name / "f").write_text("x")
        old = time.time() - 2 * 24 * 3600
        os.utime(tmp_path / [n for n in names if n.endswith("-ff")][0], (old, old))
        os.symlink(tmp_path / "out", tmp_path / f".lnk.tmp-{_dead_pid()}-1-{boot}-gg")  # a link: never followed
        scratch.sweep(tmp_path)
        kept = {p.name for p in tmp_path.iterdir()}
        assert kept == {n for n, keep in names.items() if keep} | {f for f in kept if f.startswith(".lnk")}
        assert any(f.startswith(".lnk") for f in kept) and (tmp_path / "out" / "f").exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_run_tempdir_holds_this_runs_temp_files_and_sweeps_dead_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"edgetool-run-{_dead_pid()}-77-{scratch._BOOT}"
    (dead / "edgetool-src-x").mkdir(parents=True)
    with scratch.run_tempdir() as mine:
        assert not dead.exists()
        assert mine.parent == tmp_path and mine.name == f"edgetool-run-{scratch.run_token()}"
        assert Path(tempfile.mkdtemp(prefix="edgetool-src-")).parent == mine
    assert list(tmp_path.iterdir()) == [] and tempfile.tempdir == str(tmp_path)


def test_a_folder_swapped_in_at_the_last_instant_is_swapped_back(tmp_path, swap_mode):
    """The marker check passes, then (inside the check, standing in for the user) the output is replaced by a
    user's folder: the swap notices after the exchange and puts the user's folder back, untouched."""
    outswap.install_dir(_built(tmp_path, "old"), tmp_path / "out", False, has_marker)
    calls = []

    def is_ours(path: Path) -> bool:
        calls.append(path)
        if len(calls) == 1:  # the check before the swap: then the user's folder takes the place
            os.rename(tmp_path / "out", tmp_path / "previous")
            (tmp_path / "out").mkdir()
            (tmp_path / "out" / "notes.txt").write_text("mine")
            return True
        return has_marker(path)

    tmp = _built(tmp_path)
    with pytest.raises(UsageError, match="did not write"):
        outswap.install_dir(tmp, tmp_path / "out", True, is_ours)
    assert os.listdir(tmp_path / "out") == ["notes.txt"] and (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert (tmp / "model.tflite").read_text() == "new"  # ours is back at its temp name, for the caller to remove


def test_atomic_file_and_dir_follow_a_link_and_leave_nothing_beside(tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.json").write_text("old")
    os.symlink("reports/r.json", tmp_path / "latest.json")
    with atomic_file(tmp_path / "latest.json", force=True) as tmp:
        tmp.write_text("new")
    with atomic_dir(tmp_path / "runs" / "a") as tmp:
        (tmp / "m.tflite").write_text("1")
    os.symlink("runs/a", tmp_path / "latest")
    with atomic_dir(tmp_path / "latest", force=True) as tmp:
        (tmp / "m.tflite").write_text("2")
    assert os.readlink(tmp_path / "latest.json") == "reports/r.json"
    assert (tmp_path / "reports" / "r.json").read_text() == "new"
    assert os.readlink(tmp_path / "latest") == "runs/a" and (tmp_path / "runs" / "a" / "m.tflite").read_text() == "2"
    assert sorted(os.listdir(tmp_path)) == ["latest", "latest.json", "reports", "runs"]
    assert os.listdir(tmp_path / "reports") == ["r.json"] and os.listdir(tmp_path / "runs") == ["a"]


def test_a_dangling_link_at_o_is_refused(tmp_path):
    os.symlink("nowhere", tmp_path / "out")
    for make in (atomic_dir, atomic_file):
        with pytest.raises(UsageError, match="does not exist"):
            with make(tmp_path / "out", force=True):
                pass
    assert os.listdir(tmp_path) == ["out"]
