""".keras and .h5 files through every command that documents them (issue 20.5): inspect, convert --quant auto,
eval --reference, check and demo read a Keras-3 ``.keras`` file and a tf_keras ``.h5`` file the way convert does.

The oracle is Keras itself: the file's own ``predict`` (Keras 3 for the .keras file, tf_keras for the .h5), run in
a separate process; the converted files run in plain LiteRT (``tests.oracles.litert_outputs``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edge_tool.convert import source as source_mod
from edge_tool.litert.recipes import resolve_calibration
from tests.edgetool_runs import REPO, run_edgetool
from tests.oracles.litert_outputs import litert_outputs

# not in the quick tier: builds .keras/.h5 files and exports each once per command (~4 min of the quick tier under load)
pytestmark = pytest.mark.slow

PARAMS = (3 * 3 * 1 * 8 + 8) + (8 * 8 * 8 * 10 + 10)  # Conv2D(8, 3) on 8x8x1 + Dense(10) on 512 features

_PREDICT = """
import sys, numpy as np
if sys.argv[3] == "h5":
    import tf_keras as keras
else:
    import keras
model = keras.models.load_model(sys.argv[1], compile=False)
np.save(sys.argv[2], np.asarray(model.predict(np.load(sys.argv[4])["x"], verbose=0), dtype=np.float64))
"""


def keras_predict(model: Path, data: Path, tmp_path: Path) -> np.ndarray:
    """The Keras file's own predictions on ``data``'s x, from the Keras that saved it (a separate process)."""
    out = tmp_path / f"{model.name}-predict.npy"
    kind = "h5" if model.suffix == ".h5" else "keras"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if kind == "h5" else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _PREDICT, model, out, kind, data],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return np.load(out)


@pytest.fixture(scope="module", params=["keras3", "h5"])
def keras_file(request) -> Path:
    """Each of the two Keras files (a Keras-3 .keras and a tf_keras .h5)."""
    return request.getfixturevalue("keras3_file" if request.param == "keras3" else "h5_file")


def _eval_data(model: Path) -> Path:
    return Path(f"{model}.eval.npz")


def test_inspect_reads_a_keras_file_as_convert_does(keras_file):
    """inspect: the signature and parameter count of the model in the file, and which Keras read it."""
    proc = run_edgetool("inspect", keras_file, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["format"] == ("h5" if keras_file.suffix == ".h5" else "keras")
    assert report["size_bytes"] == keras_file.stat().st_size
    serving = next(s for s in report["signatures"] if s["key"] == "serving_default")
    assert [i["shape"] for i in serving["inputs"]] == [[None, 8, 8, 1]]
    assert [o["shape"] for o in serving["outputs"]] == [[None, 10]]
    assert report["parameters"]["total"] == PARAMS
    keras = report["keras"]
    if keras_file.suffix == ".h5":
        assert keras["flavor"] == "keras2-file" and keras["keras_version"] is None
    else:
        assert keras["flavor"] == "keras3-file" and keras["keras_version"].startswith("3")


def test_eval_reference_is_the_keras_file(keras_file, tmp_path):
    """eval --reference FILE: the reference accuracy is the Keras file's own (predict), the fp32 .tflite agrees."""
    out = tmp_path / "conv"
    proc = run_edgetool("convert", keras_file, "-o", out, "--quant", "fp32")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = _eval_data(keras_file)
    report_path = tmp_path / "eval.json"
    proc = run_edgetool(
        "eval",
        next(out.glob("*_fp32.tflite")),
        "--reference",
        keras_file,
        "--data",
        data,
        "--runs",
        "2",
        "--json",
        report_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(report_path.read_text())
    y = np.load(data)["y"]
    want = float(np.mean(keras_predict(keras_file, data, tmp_path).argmax(1) == y))
    assert report["reference"]["accuracy"] == pytest.approx(want, abs=1e-9)
    assert report["reference"]["saved_model"] == str(keras_file)
    row = report["results"][0]
    assert row["top1_agreement"] == 1.0 and row["max_abs_error"] < 1e-5
    assert any("Keras model file" in n for n in report["notes"])


def test_auto_chooses_among_candidates_of_a_keras_file(keras_file, tmp_path):
    """convert --quant auto on a Keras file: the reference accuracy is Keras's own, the chosen file agrees with
    Keras predict within the budget."""
    data = _eval_data(keras_file)
    out = tmp_path / "auto"
    proc = run_edgetool(
        "convert",
        keras_file,
        "-o",
        out,
        "--quant",
        "auto",
        "--max-drop",
        "0.05",
        "--eval-data",
        data,
        "--calibration",
        f"{keras_file}.calibration.npz",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = json.loads((out / "decision.json").read_text())
    x, y = np.load(data)["x"], np.load(data)["y"]
    want = keras_predict(keras_file, data, tmp_path)
    assert decision["reference_accuracy"] == pytest.approx(float(np.mean(want.argmax(1) == y)), abs=1e-9)
    chosen = next(c for c in decision["candidates"] if c["chosen"])
    got = litert_outputs(out / chosen["file"], x)
    assert float(np.mean(got.argmax(1) == y)) == pytest.approx(chosen["accuracy"], abs=1e-9)
    assert np.mean(got.argmax(1) == want.argmax(1)) >= 0.95


def test_check_takes_a_keras_file_without_calibration(keras_file):
    """check FILE with no --calibration: every target gets a verdict (int8 ones on synthetic data, said so)."""
    proc = run_edgetool("check", keras_file, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    verdicts = {r["target"]: r for r in report["results"]}
    assert set(verdicts) == {"litert-cpu", "gpu", "tflm", "tfjs", "litertjs", "edgetpu"}
    assert all(r["verdict"] in ("runs", "partial") for r in verdicts.values()), (
        report
    )  # Keras 3's Flatten: SHAPE on gpu
    for name in ("tflm", "litertjs", "edgetpu"):
        assert verdicts[name]["details"]["calibration"] == "synthetic"
        assert "synthetic" in verdicts[name]["method"]
    assert "calibration" not in verdicts["litert-cpu"]["details"]


def test_demo_builds_a_site_from_a_keras_file(keras_file, tmp_path):
    """demo FILE: the site's TFJS model gives Keras's own predictions (measured by eval in Node's tfjs)."""
    site = tmp_path / "site"
    proc = run_edgetool("demo", keras_file, "-o", site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((site / "demo-config.json").read_text())
    assert keras_file.name in config["title"]
    data = _eval_data(keras_file)
    report_path = tmp_path / "eval.json"
    proc = run_edgetool(
        "eval", site / "model", "--reference", keras_file, "--data", data, "--runs", "1", "--json", report_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(report_path.read_text())["results"][0]
    want = keras_predict(keras_file, data, tmp_path)
    assert row["accuracy"] == pytest.approx(float(np.mean(want.argmax(1) == np.load(data)["y"])), abs=1e-9)
    assert row["max_abs_error"] < 1e-4


def test_qat_refuses_a_keras3_file_before_loading_it(keras3_file, tmp_path):
    """--quant qat on a Keras-3 .keras file: exit 2 at once (metadata.json), naming the blocker and the way out."""
    t0 = time.perf_counter()
    proc = run_edgetool(
        "convert", keras3_file, "-o", tmp_path / "q", "--quant", "qat", "--train-data", f"{keras3_file}.calibration.npz"
    )
    seconds = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "Keras 3" in out and "tf_keras" in out and "--quant int8" in out
    assert "load model" not in out and not (tmp_path / "q").exists()
    assert seconds < 8, seconds


def test_default_calibration_is_found_beside_a_keras_file(tmp_path):
    """calibration.npz in the folder of model.keras is the default, as inside a SavedModel directory (the zoo's
    ConvNeXt .keras: int8 was refused as 'no calibration.npz' with the file right there)."""
    (tmp_path / "model.keras").write_bytes(b"")
    assert resolve_calibration(tmp_path / "model.keras", None) is None
    (tmp_path / "calibration.npz").write_bytes(b"")
    assert resolve_calibration(tmp_path / "model.keras", None) == tmp_path / "calibration.npz"
    saved = tmp_path / "saved"
    saved.mkdir()
    assert resolve_calibration(saved, None) is None  # a directory's parent is not searched
    assert resolve_calibration(saved, tmp_path / "other.npz") == tmp_path / "other.npz"


def test_one_process_exports_a_keras3_file_once_while_the_export_exists(keras3_file, tmp_path, monkeypatch):
    """auto prepares its Keras file up to three times (reference, candidates, selective search): the Keras-3 child
    (a fresh Keras process) runs once and later requests copy its export; a batch or a removed export makes a new
    one, the same bytes under another name do not."""
    calls = []
    real = source_mod.export_keras3_file
    monkeypatch.setattr(source_mod, "_EXPORTED", {})
    monkeypatch.setattr(source_mod, "export_keras3_file", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    a = source_mod.prepare_source(keras3_file, tmp_path / "a")
    b = source_mod.prepare_source(keras3_file, tmp_path / "b")
    assert calls == [None] and a.saved_model != b.saved_model
    assert a.signature == b.signature and a.sha256 == b.sha256
    x = np.load(f"{keras3_file}.eval.npz")["x"][:4]
    import tensorflow as tf

    outs = [
        next(iter(tf.saved_model.load(str(s.saved_model)).signatures["serving_default"](tf.constant(x)).values()))
        for s in (a, b)
    ]
    np.testing.assert_array_equal(outs[0].numpy(), outs[1].numpy())
    (tmp_path / "c").mkdir()
    fixed = source_mod.prepare_source(keras3_file, tmp_path / "c", batch=1)
    assert calls == [None, 1] and fixed.fixed_batch.batch == 1
    for name in ("a", "b"):  # the earlier exports are gone: the next request exports again
        shutil.rmtree(tmp_path / name)
        (tmp_path / name).mkdir()
    source_mod.prepare_source(keras3_file, tmp_path / "a")
    assert calls == [None, 1, None]
    other = tmp_path / "other.keras"
    other.write_bytes(keras3_file.read_bytes())
    source_mod.prepare_source(other, tmp_path / "b")
    assert calls == [None, 1, None]
