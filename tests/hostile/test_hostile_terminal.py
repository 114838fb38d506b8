"""No string edgetool did not write reaches the terminal raw: file names, labels, metadata, board text, requests.

One table: each row runs one command (the real CLI, in a fresh process or a fork of the test server) on inputs
whose names or contents hold terminal escapes — clear screen (CSI 2J), a window-title OSC, an OSC 8 hyperlink,
BEL, an 8-bit CSI (U+009B) and a bidi override (U+202E) — and asserts none of those characters reaches stdout or
stderr (textsafe shows them as ``\\x1b``, ``\\u202e``). The device paths (eval/check/device with a board) are
covered where the board's answers are parsed (tests/test_device*.py); ``check``'s printer is tested here with
a board error text directly.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from edge_tool.check.base import Finding, Status, TargetResult, Verdict
from edge_tool.check.run import CheckReport, print_report
from tests.edgetool_runs import REPO, edgetool_process, run_edgetool

# one name, every kind of escape; no "/" (a file name) and short enough for one path segment
EVIL = "a\x1b[2J\x1b]0;owned\x07\x1b]8;;http:evil\x1b\\x\x1b]8;;\x1b\\\u202egnp\x9b31mz"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def assert_inert(out: str, what: str) -> None:
    """None of the raw escape characters in ``out``; what they were turned into is still there."""
    found = [repr(c) for c in RAW if c in out]
    assert not found, f"{what}: raw {found} reached the terminal:\n{out[-3000:]!r}"


@pytest.fixture(scope="session")
def flat_tflite_plain(flat_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("terminal-tflite") / "out"
    proc = run_edgetool("convert", flat_model, "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("*.tflite"))


def _hostile_labels(root: Path, flat_model: Path, tflite: Path) -> None:
    shutil.copytree(flat_model, root / f"m{EVIL}")
    (root / f"m{EVIL}" / "labels.txt").write_text(f"cat{EVIL}\ndog\nbird\n")


def _files(root: Path, flat_model: Path, tflite: Path) -> None:
    shutil.copy(tflite, root / f"{EVIL}.tflite")
    np.save(root / f"{EVIL}.npy", np.zeros((4, 4), np.float32))
    (root / "labels.txt").write_text(f"cat{EVIL}\ndog\nbird\n")


def _corrupt(root: Path, flat_model: Path, tflite: Path) -> None:
    (root / f"{EVIL}.tflite").write_bytes(b"\0\0\0\0TFL3" + bytes(64))


# (name, builder, args); FLAT is the flat SavedModel; every run must exit with `code`
ROWS: list[tuple[str, Callable, tuple[str, ...], int]] = [
    ("inspect-file-name", _files, ("inspect", f"{EVIL}.tflite"), 0),
    ("inspect-damaged-file-name", _corrupt, ("inspect", f"{EVIL}.tflite"), 2),
    ("check-file-name", _files, ("check", f"{EVIL}.tflite", "--target", "litert-cpu"), 0),
    ("check-damaged-file-name", _corrupt, ("check", f"{EVIL}.tflite"), 2),
    ("eval-file-names", _files, ("eval", f"{EVIL}.tflite", "-r", "FLAT", "--data", f"{EVIL}.npy"), 0),
    (
        "eval-labels",
        _files,
        ("eval", f"{EVIL}.tflite", "-r", "FLAT", "--data", f"{EVIL}.npy", "--labels", "labels.txt"),
        0,
    ),
    ("convert-output-name", _files, ("convert", "FLAT", "-o", f"o{EVIL}"), 0),
    ("convert-model-name-and-labels", _hostile_labels, ("convert", f"m{EVIL}", "-o", "out"), 0),
    ("demo-labels-and-output", _files, ("demo", "FLAT", "--labels", "labels.txt", "-o", f"s{EVIL}"), None),
    ("missing-path", _files, ("inspect", f"nothing{EVIL}"), 2),
]


@pytest.mark.slow
@pytest.mark.parametrize("build,args,code", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_no_raw_escape_reaches_the_terminal(build, args, code, flat_model, flat_tflite_plain, tmp_path):
    root = tmp_path / "case"
    root.mkdir()
    build(root, flat_model, flat_tflite_plain)
    args = tuple(str(flat_model) if a == "FLAT" else a for a in args)
    env = {**os.environ, "TMPDIR": str(tmp_path), "EDGETOOL_DEBUG": "1", "COLUMNS": "400"}
    proc = edgetool_process(list(args), env, root, 600)
    out = proc.stdout + proc.stderr
    assert code is None or proc.returncode == code, f"exit {proc.returncode}\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
    assert_inert(out, " ".join(args))
    assert "\\x1b" in out or "\\u202e" in out or proc.returncode != 0 or args[0] == "demo", out[-2000:]


def test_embedded_metadata_is_shown_escaped(flat_model, tmp_path):
    """Labels with escapes embedded by convert come back through inspect's metadata view, inert."""
    _hostile_labels(tmp_path, flat_model, None)
    out = tmp_path / "out"
    proc = run_edgetool("convert", tmp_path / f"m{EVIL}", "-o", out)
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    assert_inert(proc.stdout + proc.stderr, "convert")
    if proc.returncode == 0:
        inspected = run_edgetool("inspect", next(out.glob("*.tflite")))
        assert inspected.returncode == 0, inspected.stderr[-2000:]
        assert_inert(inspected.stdout + inspected.stderr, "inspect")


def test_check_prints_board_and_file_text_inert(capsys):
    """check's terminal form: model name, method and a device's error text (as a board sends it) escaped."""
    result = TargetResult(
        "device",
        f"{EVIL}.tflite",
        Verdict.FAILS,
        (Finding(f"(model){EVIL}", Status.UNSUPPORTED, f"board: {EVIL}"),),
        EVIL,
    )
    print_report(CheckReport(f"{EVIL}.tflite", "tflite", (result,)))
    out = capsys.readouterr()
    assert_inert(out.out + out.err, "check")
    assert out.out.count("\\x1b") >= 4 and "\\u202e" in out.out


def test_serve_log_shows_a_hostile_request_inert(tmp_path):
    """serve logs each request line: a client's escapes are shown, not obeyed."""
    site = tmp_path / f"s{EVIL}"
    for rel in ("index.html", "sw.js", "app.js", "demo-config.json", "manifest.webmanifest"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("x")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        for target in (f"/{EVIL}", "/index.html?" + EVIL):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                while sock.recv(65536):
                    pass
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_inert(line + out + err, "serve")
    assert "\\x1b" in err, err


def test_harness_would_catch_a_raw_escape():
    """The assertion itself fails on raw text (so the table cannot pass vacuously)."""
    with pytest.raises(AssertionError):
        assert_inert(io.StringIO(EVIL).read(), "self-test")
