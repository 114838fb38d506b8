"""Child interpreters import nothing from the current directory or PYTHONPATH (issue 21.3).

Modules named like edgetool's dependencies (and like edgetool itself and a few stdlib modules a child imports
first) are planted in the working directory and in a PYTHONPATH directory; each writes a marker file when
imported. The parent edgetool runs as ``python -I -m edge_tool`` so that it cannot import them itself: any
marker can only come from a child process. Every command that starts children (the LiteRT smoke child, the
Keras-3 export child, the TFJS export child and the background conversion worker of ``convert``; the LiteRT
and latency workers of ``eval``; the LiteRT and TFLM probes of ``check``; ``train``'s multi-worker processes)
must succeed and leave no marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.core.childproc import module_command, python_command
from tests.edgetool_runs import REPO

# not in the quick tier: every test runs several commands with planted modules (~4 min of the quick tier under load)
pytestmark = pytest.mark.slow

SHADOWED = (
    "numpy",
    "tensorflow",
    "keras",
    "tf_keras",
    "ai_edge_litert",
    "tflite_micro",
    "tensorflowjs",
    "edge_tool",
    "calibration",
    "runpy",
    "json",
    "socket",
    "multiprocessing",
)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict[str, Path]:
    """{"cwd": dir with shadow modules, "pythonpath": another such dir, "markers": where they write}."""
    base = tmp_path_factory.mktemp("planted")
    markers = base / "markers"
    markers.mkdir()
    dirs = {"cwd": base / "cwd", "pythonpath": base / "pp"}
    for where, d in dirs.items():
        d.mkdir()
        for name in SHADOWED:
            (d / f"{name}.py").write_text(
                f"import pathlib\npathlib.Path({str(markers)!r}, '{where}-{name}').write_text(__file__)\n"
                f"raise ImportError('planted shadow module {name} imported from {where}')\n"
            )
    return {**dirs, "markers": markers}


def run_isolated_parent(planted: dict[str, Path], *args, timeout: float = 900) -> subprocess.CompletedProcess:
    """edgetool ARGS with the planted cwd and PYTHONPATH; the parent itself is ``-I`` (only children can see them)."""
    env = {**os.environ, "PYTHONPATH": str(planted["pythonpath"]), "EDGETOOL_CONVERT_WORKERS": "1"}
    env.pop("PYTHONSAFEPATH", None)
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "edge_tool", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=planted["cwd"],
        timeout=timeout,
    )
    markers = sorted(p.name for p in planted["markers"].iterdir())
    assert not markers, f"a child imported planted modules: {markers}\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def test_planted_modules_fire_in_a_plain_child(planted):
    """The planted modules are live: a child started the way edgetool used to (``python -c``) imports them."""
    env = {**os.environ, "PYTHONPATH": str(planted["pythonpath"])}
    subprocess.run([sys.executable, "-c", "import numpy"], cwd=planted["cwd"], env=env, capture_output=True)
    fired = sorted(p.name for p in planted["markers"].iterdir())
    for p in planted["markers"].iterdir():
        p.unlink()
    assert fired == ["cwd-numpy"]


def test_convert_children_are_isolated(planted, flat_model, keras3_file, tmp_path):
    """convert of a SavedModel (smoke child, TFJS child, background worker) and of a Keras-3 .keras file
    (its export child) import nothing planted, and still produce their files."""
    out = tmp_path / "conv"
    run_isolated_parent(planted, "convert", flat_model, "-o", out, "--format", "all", "--quant", "fp32,dynamic")
    assert (out / "tfjs" / "model.json").is_file() and list(out.glob("*_dynamic.tflite"))
    out3 = tmp_path / "conv3"
    run_isolated_parent(planted, "convert", keras3_file, "-o", out3, "--quant", "fp32")
    assert list(out3.glob("*_fp32.tflite"))


def test_eval_and_check_children_are_isolated(planted, flat_model, tmp_path):
    """eval's LiteRT and latency workers, check's LiteRT and TFLM probes: nothing planted imported."""
    out = tmp_path / "conv"
    run_isolated_parent(planted, "convert", flat_model, "-o", out, "--quant", "fp32")
    tflite = next(out.glob("*_fp32.tflite"))
    proc = run_isolated_parent(
        planted,
        "eval",
        tflite,
        "--reference",
        flat_model,
        "--data",
        flat_model / "eval.npz",
        "--runs",
        "3",
        "--json",
        tmp_path / "eval.json",
    )
    rows = json.loads((tmp_path / "eval.json").read_text())["results"]
    assert rows and not any(r.get("failed") for r in rows) and rows[0]["top1_agreement"] == 1.0, proc.stdout[-2000:]
    assert rows[0]["latency_ms"]["runs"] >= 3
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).normal(size=(16, 4)).astype("float32"))
    run_isolated_parent(planted, "check", flat_model, "--target", "litert-cpu,tflm", "--calibration", calib)


def test_train_workers_are_isolated(planted, tmp_path):
    """train --strategy multiworker starts one child per worker: they import nothing planted."""
    out = tmp_path / "trained"
    run_isolated_parent(
        planted, "train", "--strategy", "multiworker", "--workers", "2", "--epochs", "1", "-o", out, timeout=1200
    )
    assert (out / "saved_model.pb").is_file()


def test_child_command_is_isolated():
    """The one helper every child is started with: -I (or -E -P), and edgetool's modules found without cwd."""
    assert "-I" in python_command("-c", "pass") or {"-E", "-P"} <= set(python_command("-c", "pass"))
    proc = subprocess.run(
        module_command("edge_tool.check.litert_probe", "/nonexistent.tflite"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "ModuleNotFoundError" not in proc.stderr, proc.stderr
