"""No TensorFlow / absl / LiteRT log line and no library deprecation warning in any command's output unless
``EDGETOOL_VERBOSE=1`` (issue 20.6), and edgetool's own messages still get through.

Each command runs the way a user runs it (a fresh process, no TF_CPP_MIN_LOG_LEVEL in the environment); every
line of stdout and stderr is matched against the shapes these libraries log in.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.edgetool_runs import REPO

NOISE = [
    re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]"),  # absl C++ (I0000 00:00:17… 123 file.cc:67])
    re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] "),  # TensorFlow C++ (2026-… : I tensorflow/…)
    re.compile(r"All log messages before absl::InitializeLog"),
    re.compile(r"^INFO: (Created TensorFlow Lite|Initialized TensorFlow Lite)"),  # LiteRT's C++ INFO lines
    re.compile(r"oneDNN custom operations|cuInit|CUDA error|TF-TRT Warning|This TensorFlow binary is optimized"),
    re.compile(r"^(WARNING|INFO|ERROR):(tensorflow|absl|root):"),  # TF / absl Python logging
    re.compile(r"(Deprecation|FutureWarning|UserWarning|warnings\.warn)"),
    re.compile(r"is deprecated"),
    re.compile(r"^fully_quantize: \d"),  # the TFLite calibrator's print
    re.compile(r"^W0000|^I0000"),
]


def run_user(*args, verbose: bool = False, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """``edgetool ARGS`` in a fresh process with a user's environment (no TF log level, verbose only if asked)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "EDGETOOL_VERBOSE", "PYTHONWARNINGS")
    }
    if verbose:
        env["EDGETOOL_VERBOSE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "edge_tool", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=1200,
    )


def noise(proc: subprocess.CompletedProcess) -> list[str]:
    """Lines of the library-log shapes in a run's stdout and stderr."""
    lines = (proc.stdout + "\n" + proc.stderr).splitlines()
    return [ln for ln in lines if any(p.search(ln) for p in NOISE)]


def assert_quiet(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert noise(proc) == [], "\n".join(noise(proc))


@pytest.fixture(scope="module")
def converted(digits_model, tmp_path_factory) -> Path:
    """``convert --format all --quant fp32,int8`` of the digits model (itself checked for quiet output)."""
    out = tmp_path_factory.mktemp("quiet") / "conv"
    assert_quiet(run_user("convert", digits_model, "-o", out, "--format", "all", "--quant", "fp32,int8"))
    return out


def test_convert_and_inspect_of_a_tflite_are_quiet(converted):
    """convert (fixture) and inspect of the int8 .tflite (LiteRT's XNNPACK INFO line is written at fd level)."""
    assert_quiet(run_user("inspect", next(converted.glob("*_int8.tflite"))))


def test_verbose_brings_the_library_lines_back(digits_model):
    """EDGETOOL_VERBOSE=1: TensorFlow's own C++ log lines reach the terminal again (the quiet test can fail).
    (inspect of a .tflite reads its signature from the flatbuffer now, so no interpreter prints LiteRT's line.)"""
    proc = run_user("inspect", digits_model, verbose=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert any("tensorflow/" in ln for ln in noise(proc)), proc.stderr[-3000:]


def test_eval_is_quiet(converted, digits_model):
    """eval of the int8 .tflite and the TFJS model against the SavedModel."""
    assert_quiet(
        run_user(
            "eval",
            next(converted.glob("*_int8.tflite")),
            converted / "tfjs",
            "--reference",
            digits_model,
            "--data",
            digits_model / "eval.npz",
            "--runs",
            "2",
        )
    )


def test_check_is_quiet(digits_model):
    """check on every target (the int8 builds run the TFLite calibrator, which prints and warns)."""
    assert_quiet(run_user("check", digits_model))


def test_demo_and_demo_litert_are_quiet(digits_model, tmp_path):
    """demo (TFJS export: grappler's absl lines) and demo --litert (converter, calibrator, LiteRT)."""
    assert_quiet(run_user("demo", digits_model, "-o", tmp_path / "site"))
    proc = run_user("demo", digits_model, "-o", tmp_path / "site2", "--litert")
    assert_quiet(proc)
    verbose = run_user("demo", digits_model, "-o", tmp_path / "site3", verbose=True)
    assert verbose.returncode == 0 and noise(verbose), "EDGETOOL_VERBOSE=1 showed no TensorFlow line"


def test_qat_is_quiet(digits_model, tmp_path):
    """convert --quant qat (tfmot, the calibrator's deprecation warning) — its own progress lines stay."""
    proc = run_user(
        "convert",
        digits_model,
        "-o",
        tmp_path / "q",
        "--quant",
        "qat",
        "--train-data",
        digits_model / "train.npz",
        "--qat-epochs",
        "1",
    )
    assert_quiet(proc)
    assert "qat epoch 1" in proc.stdout + proc.stderr


def test_own_errors_still_reach_the_terminal(digits_model, tmp_path):
    """Inside the quiet blocks edgetool's own error is printed (exit 2 with the message)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "mine.txt").write_text("user file")
    proc = run_user("demo", digits_model, "-o", tmp_path / "site")
    assert proc.returncode == 2 and "site" in proc.stderr and noise(proc) == []
    proc = run_user("inspect", tmp_path / "site" / "mine.txt")
    assert proc.returncode == 2 and "mine.txt" in proc.stderr
