"""A full file system is named (issue 40, item 4): a real 64 KiB tmpfs, filled to the last byte, as the output of
``convert -o`` and ``eval --json/--markdown/--html``. The error names the file that was being written and the free
space of that file system; nothing partial is left there and the inputs are untouched. Needs root (mount)."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess

import pytest

from tests.edgetool_runs import run_edgetool
from tests.hostile.core_fixtures import flat_artifacts  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def full_fs(tmp_path):
    mnt = tmp_path / "full"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode()[:200]}")
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill it to the last byte
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _named(proc, written, mnt):
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, (proc.returncode, said[-2000:])
    assert "No space left on device" in said and f"while writing '{written}'" in said, said
    assert f"free of 64.0 KiB on the file system holding {mnt}" in said, said
    assert sorted(p.name for p in mnt.iterdir()) == ["filler"]  # nothing partial, no temp file


def test_convert_onto_a_full_file_system_names_the_file_and_the_free_space(flat_model, full_fs):
    before = {p: _digest(p) for p in flat_model.rglob("*") if p.is_file()}
    proc = run_edgetool("convert", flat_model, "-q", "fp32", "-o", full_fs / "out")
    said = " ".join(proc.stderr.split())
    assert f"while writing '{full_fs / 'out'}/" in said, said
    _named(proc, next(iter(said.split("while writing '")[1:]), "").split("'")[0], full_fs)
    assert {p: _digest(p) for p in flat_model.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("kind", ["json", "markdown", "html"])
def test_eval_report_onto_a_full_file_system_names_the_file_and_the_free_space(
    flat_model, flat_artifacts, full_fs, kind
):
    report = full_fs / f"report.{kind}"
    args = ["-r", flat_model, "-d", flat_model / "eval.npz", "--runs", "1", f"--{kind}", report]
    proc = run_edgetool("eval", flat_artifacts["tflite"], *args)
    _named(proc, report, full_fs)
