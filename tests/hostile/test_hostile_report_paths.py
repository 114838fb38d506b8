"""``eval``'s report paths are checked before any work (issue 40, item 5): a FIFO is never replaced (not even with
``--force``), and a refused report path (a FIFO, the reference itself, a read-only location) is refused before
TensorFlow is imported — a fresh interpreter's ``-X importtime`` log shows it never was."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from tests.edgetool_runs import REPO


def _eval_fresh(tmp_path, *report):
    args = ["eval", tmp_path / "m.tflite", "-r", tmp_path / "ref.h5", "-d", tmp_path / "d.npz", *report]
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "edge_tool", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


def _imported(proc) -> set[str]:
    return {ln.rpartition("|")[2].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time")}


@pytest.fixture
def inputs(tmp_path):
    for name in ("m.tflite", "ref.h5", "d.npz"):
        (tmp_path / name).write_bytes(b"\0" * 16)
    return tmp_path


@pytest.mark.parametrize(
    ("report", "says"),
    [
        (("--html", "{d}/pipe.html", "--force"), "is a FIFO (named pipe), not a regular file"),
        (("--markdown", "{d}/pipe.html"), "is a FIFO (named pipe), not a regular file"),
        (("--json", "{d}/ref.h5", "--force"), "is the reference model"),
        (("--json", "/proc/report.json"), "/proc/report.json"),
    ],
)
def test_eval_refuses_report_paths_before_importing_tensorflow_and_never_replaces_a_fifo(inputs, report, says):
    os.mkfifo(inputs / "pipe.html")
    opened = []  # a reader on the FIFO would see anything written into it
    reader = threading.Thread(target=lambda: opened.append(open(inputs / "pipe.html", "rb").read()), daemon=True)
    reader.start()
    proc = _eval_fresh(inputs, *(a.format(d=inputs) for a in report))
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, said[-2000:]
    assert says in said, said[-2000:]
    assert not {"tensorflow", "edge_tool.keras_files", "edge_tool.evaluate.pipeline"} & _imported(proc)
    assert (inputs / "pipe.html").is_fifo() and (inputs / "ref.h5").read_bytes() == b"\0" * 16
    with open(inputs / "pipe.html", "wb"):  # release the reader thread
        pass
    reader.join(5)
    assert opened == [b""]
