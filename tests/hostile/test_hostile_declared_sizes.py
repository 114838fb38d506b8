"""Sizes declared inside a model container are bounded before anything materializes them (issue 40, item 3).

Hostile files, built cheaply: a few-KB ``.h5`` whose kernel is a gzip-filtered dataset declaring 1.6 GB (fill value
only, no chunk written), a SavedModel whose graph holds one Const declaring 3 GiB as a splat (one value), and a
checkpoint index whose variable is over a lowered ``EDGETOOL_MAX_TENSOR_BYTES``. Every command refuses exit 2 naming
the tensor and its declared size, and writes nothing. (By hand: the splat's ``convert --format tfjs`` now peaks at
590 MB — TensorFlow's import — instead of 3.7 GB.)
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile

import pytest

from tests.builds import SPLAT_SAVED_MODEL, run_script
from tests.edgetool_runs import run_edgetool


@pytest.fixture(scope="module")
def splat_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("splat") / "sm"
    run_script(SPLAT_SAVED_MODEL, out)
    return out


def _gzip_h5(path):
    import h5py

    config = {"class_name": "Sequential", "config": {"name": "s", "layers": []}}
    with h5py.File(path, "w") as f:
        f.attrs["model_config"] = json.dumps(config)
        f.attrs["keras_version"] = "2.15.0"
        g = f.create_group("model_weights/dense/dense")
        g.create_dataset("kernel:0", shape=(20000, 20000), dtype="f4", compression="gzip", chunks=(1000, 1000))
    assert os.path.getsize(path) < 2 << 20  # a small file ...
    with h5py.File(path, "r") as f:  # ... declaring 1.6 GB
        assert f["model_weights/dense/dense/kernel:0"].size * 4 == 1_600_000_000


def _refused(proc, *words):
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, (proc.returncode, said[-2000:])
    assert all(w in said for w in words), said
    assert "EDGETOOL_MAX_TENSOR_BYTES" in said


@pytest.mark.parametrize(
    "command", [("inspect",), ("convert", "-o", "out"), ("convert", "--format", "tfjs", "-o", "o")]
)
def test_gzip_h5_declaring_1_6_gb_is_refused_before_h5py_reads_it(tmp_path, command):
    _gzip_h5(tmp_path / "big.h5")
    args = [a if a not in ("out", "o") else tmp_path / a for a in command[1:]]
    proc = run_edgetool(command[0], tmp_path / "big.h5", *args)
    _refused(proc, "kernel:0", "(20000, 20000)", "1,600,000,000 bytes")
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", [("inspect",), ("convert", "--format", "tfjs"), ("convert",)])
def test_savedmodel_const_splat_declaring_3_gib_is_refused_before_tensorflow_builds_it(splat_model, tmp_path, command):
    extra = ("-o", tmp_path / "out") if command[0] == "convert" else ()
    proc = run_edgetool(command[0], splat_model, *command[1:], *extra)
    _refused(proc, "saved_model.pb", "Const", "(805306368,)", "3,221,225,472 bytes")
    assert not (tmp_path / "out").exists()


def test_checkpoint_variable_over_the_limit_is_named_from_the_index(flat_model, tmp_path):
    model = shutil.copytree(flat_model, tmp_path / "m")
    proc = run_edgetool("convert", model, "-o", tmp_path / "out", env={"EDGETOOL_MAX_TENSOR_BYTES": "40"})
    _refused(proc, "variables.index", "variable", "(4, 3)", "48 bytes")
    assert not (tmp_path / "out").exists()


def test_keras_archive_whose_weights_h5_declares_1_6_gb_is_refused(tmp_path):
    _gzip_h5(tmp_path / "model.weights.h5")
    config = {"class_name": "Sequential", "config": {"name": "s", "layers": []}, "module": "keras"}
    with zipfile.ZipFile(tmp_path / "big.keras", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("config.json", json.dumps(config))
        z.writestr("metadata.json", json.dumps({"keras_version": "3.8.0"}))
        z.write(tmp_path / "model.weights.h5", "model.weights.h5")
    for args in (("inspect",), ("convert", "-o", tmp_path / "out")):
        proc = run_edgetool(args[0], tmp_path / "big.keras", *args[1:])
        _refused(proc, "model.weights.h5", "kernel:0", "1,600,000,000 bytes")
    assert not (tmp_path / "out").exists()
