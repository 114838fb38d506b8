"""``check`` without ``--calibration`` (issue 20.6): the float targets are reported as always, and the int8 ones are
checked on an int8 build calibrated with synthetic data, which the report says — never exit 2 for all six targets.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from edge_tool.check.synthetic import write_synthetic_calibration
from tests.edgetool_runs import edgetool_in_process

TFLM_RUNS = """
import sys, numpy as np
from tflite_micro import runtime
it = runtime.Interpreter.from_bytes(open(sys.argv[1], "rb").read(), arena_size=8 << 20)
d = it.get_input_details(0)
it.set_input(np.zeros(d["shape"], d["dtype"]), 0)
it.invoke()
"""

INT8_TARGETS = {"tflm", "litertjs", "edgetpu"}


def _report(proc) -> dict:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return {r["target"]: r for r in json.loads(proc.stdout)["results"]}


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_no_calibration_anywhere_checks_int8_targets_on_synthetic_data(flat_model, tmp_path):
    """flat_model has no calibration.npz: all six targets get a verdict; the int8 ones say synthetic data."""
    assert not (flat_model / "calibration.npz").exists()
    results = _report(edgetool_in_process("check", flat_model, "--json"))
    assert set(results) == {"litert-cpu", "gpu", "tflm", "tfjs", "litertjs", "edgetpu"}
    assert all(r["verdict"] == "runs" for r in results.values()), results
    for name, r in results.items():
        synthetic = r["details"].get("calibration") == "synthetic"
        assert synthetic == (name in INT8_TARGETS), name
        assert ("synthetic data" in r["method"]) == (name in INT8_TARGETS), name
    arena = results["tflm"]["details"]["tensor_arena"]["minimum_bytes"]
    assert arena > 0
    text = edgetool_in_process("check", flat_model, "-t", "tflm")
    assert text.returncode == 0 and "synthetic data" in " ".join(text.stdout.split())


def test_the_synthetic_int8_build_really_runs_in_tflm(flat_model, tmp_path):
    """The verdict is real: the int8 file check builds (kept by convert with the same synthetic data) runs in
    TFLite Micro's own interpreter, run here directly."""
    calib = write_synthetic_calibration(flat_model, tmp_path / "synthetic.npz")
    with np.load(calib) as z:
        assert z["features"].shape == (8, 4) and 0 <= z["features"].min() and z["features"].max() < 1
    out = tmp_path / "int8"
    proc = edgetool_in_process("convert", flat_model, "-o", out, "--quant", "int8", "--calibration", calib)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = subprocess.run(
        [sys.executable, "-c", TFLM_RUNS, next(out.glob("*_int8.tflite"))], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]


def test_given_or_beside_calibration_is_used_not_synthetic(flat_model, tmp_path):
    """With --calibration the int8 targets use it, and the report does not mention synthetic data."""
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).normal(size=(16, 4)).astype("float32"))
    results = _report(edgetool_in_process("check", flat_model, "-t", "tflm,edgetpu", "--calibration", calib, "--json"))
    assert all("calibration" not in r["details"] and "synthetic" not in r["method"] for r in results.values())
