"""One input contract from calibration to eval to the page, and labels that follow the data, on setups unlike the
fixtures: tf_keras models trained on sklearn's digits as 32×32 RGB PNG+JPEG folders with the preprocessing OUTSIDE
the graph (x/255, [-1, 1], ImageNet mean/std), one with Rescaling inside, one tf.function dividing by 255 itself.

Oracles are independent of edgetool's readers: Keras ``predict`` on the test split read with PIL and scaled with
numpy (saved by the training subprocess, ``user_setups``), and plain LiteRT on the same hand-made arrays.

Tolerance for int8 against float: within 4 points of top-1 on the 147 test images. Per-tensor/per-channel int8 of
this conv net moves a few borderline images (±1 image is 0.7 point); a calibration on the wrong range (the bug)
costs tens of points (the x/255 model fed 0..255 loses 30 points or more), so the bound separates the two.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from edge_tool.metadata.reader import read_metadata
from tests import user_setups as setups
from tests.edgetool_runs import run_edgetool
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated

INT8_TOLERANCE = 0.04
pytestmark = pytest.mark.slow  # trains five tiny models (~3 min) and runs ~25 edgetool commands


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("user-setups")
    setups.write_images(root / "images")
    models = setups.train(root, ("x255", "pm1", "imagenet", "inside"))
    x, y = setups.read_split(root / "images", "test")
    return {
        "root": root,
        "images": root / "images",
        "models": models,
        "x": x,
        "y": y,
        "oracle": {k: np.load(root / f"oracle_{k}.npy") for k in ("x255", "pm1", "imagenet", "inside")},
    }


def _convert(world, kind: str, out: Path, *extra) -> tuple:
    proc = run_edgetool(
        "convert",
        world["models"][kind],
        "--quant",
        "fp32,int8",
        "--calibration",
        world["images"] / "train",
        "-o",
        out,
        *extra,
    )
    return proc, out


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _int8_close_to_float(world, kind: str, tflite: Path) -> tuple[float, float]:
    x = setups.PREPROCESS[kind](world["x"]).astype(np.float32)
    float_acc = float(np.mean(world["oracle"][kind].argmax(1) == world["y"]))
    int8_acc = float(np.mean(litert_outputs(tflite, x).argmax(1) == world["y"]))
    assert float_acc > 0.5, f"the {kind} model did not learn ({float_acc:.0%}); the test would prove nothing"
    assert abs(int8_acc - float_acc) <= INT8_TOLERANCE, (kind, float_acc, int8_acc)
    return float_acc, int8_acc


@pytest.fixture(scope="module")
def x255(world, tmp_path_factory):
    proc, out = _convert(world, "x255", tmp_path_factory.mktemp("x255") / "out")
    return _ok(proc), out


def test_x255_outside_the_graph_is_measured_and_calibrated_as_trained(world, x255):
    text, out = x255
    manifest = validated(out / "manifest.json", "manifest")
    (contract,) = manifest["input_contract"]
    assert contract["source"] == "probe" and contract["std"] == [255.0] * 3 and contract["mean"] == [0.0] * 3
    assert contract["evidence"].startswith("input range 0..1: reference") and "0..255: " in contract["evidence"]
    assert manifest["calibration"]["inputs"]["input_1"]["max"] <= 1.0  # the pixels were fed as x/255
    assert "calibration: " in text and "per class four" in text and "fed input_1 " in text
    _int8_close_to_float(world, "x255", out / "model_x255_int8.tflite")

    meta = read_metadata((out / "model_x255_int8.tflite").read_bytes())
    assert meta.labels == setups.CLASSES  # the calibration folders, in image_dataset_from_directory's order
    norm = meta.inputs[0].normalization
    assert set(norm.std) == {255.0} and set(norm.mean) == {0.0}


def test_eval_feeds_the_reference_and_artefacts_through_the_contract(world, x255, tmp_path):
    _, out = x255
    report = tmp_path / "eval.json"
    proc = run_edgetool(
        "eval",
        out / "model_x255_int8.tflite",
        "-r",
        world["models"]["x255"],
        "--data",
        world["images"] / "test",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--max-drop",
        "0.04",
        "--json",
        report,
    )
    _ok(proc)
    doc = validated(report, "eval")
    keras_acc = float(np.mean(world["oracle"]["x255"].argmax(1) == world["y"]))
    assert doc["reference"]["accuracy"] == pytest.approx(keras_acc, abs=1e-9)  # same images, same numbers as Keras
    assert doc["data"]["input_contract"][0]["std"] == [255.0] * 3
    assert "by name" in doc["data"]["label_mapping"]


def test_eval_on_the_parent_of_the_splits_is_refused(world, x255):
    _, out = x255
    proc = run_edgetool(
        "eval", out / "model_x255_int8.tflite", "-r", world["models"]["x255"], "--data", world["images"], "--runs", "1"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "test, train, val" in proc.stderr and "four, one, three, zero" in proc.stderr
    assert "pass one split" in proc.stderr


def test_eval_folder_with_fewer_classes_than_outputs_is_refused(world, x255, tmp_path):
    _, out = x255
    data = tmp_path / "three-classes"
    for name in ("one", "three", "zero"):
        shutil.copytree(world["images"] / "test" / name, data / name)
    proc = run_edgetool(
        "eval", out / "model_x255_int8.tflite", "-r", world["models"]["x255"], "--data", data, "--runs", "1"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "3 class folders for a model with 4 outputs" in proc.stderr and "four" in proc.stderr


def test_eval_maps_class_folders_by_name_not_by_folder_order(world, x255, tmp_path):
    """Output 0 is "four"; called "vier" here, its folder sorts third: folder order would score every class wrong."""
    _, out = x255
    labels = tmp_path / "labels.txt"
    labels.write_text("vier\none\nthree\nzero\n")
    data = tmp_path / "renamed"
    for name in setups.CLASSES:
        shutil.copytree(world["images"] / "test" / name, data / ("vier" if name == "four" else name))
    report = tmp_path / "eval.json"
    proc = run_edgetool(
        "eval",
        out / "model_x255_fp32.tflite",
        "-r",
        world["models"]["x255"],
        "--data",
        data,
        "--labels",
        labels,
        "--runs",
        "1",
        "--warmup",
        "1",
        "--json",
        report,
    )
    _ok(proc)
    keras_acc = float(np.mean(world["oracle"]["x255"].argmax(1) == world["y"]))
    assert json.loads(report.read_text())["reference"]["accuracy"] == pytest.approx(keras_acc, abs=1e-9)
    bad = tmp_path / "wrong-names"
    shutil.copytree(data, bad)
    (bad / "vier").rename(bad / "four")
    proc = run_edgetool(
        "eval",
        out / "model_x255_fp32.tflite",
        "-r",
        world["models"]["x255"],
        "--data",
        bad,
        "--labels",
        labels,
        "--runs",
        "1",
    )
    assert proc.returncode == 2 and "four match no label" in proc.stderr and "vier" in proc.stderr, proc.stderr


def test_input_std_255_changes_calibration_not_only_metadata(world, tmp_path):
    text = _ok(_convert(world, "x255", tmp_path / "std", "--input-std", "255")[0])
    doc = json.loads((tmp_path / "std" / "manifest.json").read_text())
    assert doc["input_contract"][0]["source"] == "option"
    assert doc["calibration"]["inputs"]["input_1"]["max"] <= 1.0
    assert "warning" not in text
    raw = _ok(_convert(world, "x255", tmp_path / "raw", "--input-range", "0..255")[0])
    doc = json.loads((tmp_path / "raw" / "manifest.json").read_text())
    assert doc["calibration"]["inputs"]["input_1"]["max"] > 200  # the option wins ...
    assert "does clearly better under --input-range 0..1" in raw  # ... and is checked


def test_rescaling_inside_is_read_from_the_model(world, tmp_path):
    text = _ok(_convert(world, "inside", tmp_path / "out")[0])
    (contract,) = json.loads((tmp_path / "out" / "manifest.json").read_text())["input_contract"]
    assert contract["source"] == "model" and contract["std"] == [1.0] * 3 and "Rescaling" in contract["evidence"]
    assert "clearly better" not in text
    _int8_close_to_float(world, "inside", tmp_path / "out" / "model_inside_int8.tflite")


def test_division_inside_a_tf_function_is_read_from_the_graph(world, tmp_path):
    proc = run_edgetool("inspect", world["models"]["graph"], "--json")
    (record,) = json.loads(proc.stdout)["input_contract"]
    assert record["known"] and record["source"] == "model" and "RealDiv" in record["evidence"], record
    proc = run_edgetool("inspect", world["models"]["x255"], "--json")
    (record,) = json.loads(proc.stdout)["input_contract"]
    assert not record["known"] and "--input-range" in record["evidence"]


def test_imagenet_mean_std_is_measured(world, tmp_path):
    """ImageNet mean/std and -1..1 differ by a factor of ~2 only: the probe picks ImageNet when it leads clearly,
    else it refuses with ImageNet scored best; either way the model's own normalization is found first."""
    proc = _convert(world, "imagenet", tmp_path / "out")[0]
    if proc.returncode == 2:
        assert "is clearly best for the reference (imagenet: reference" in proc.stderr, proc.stderr
        _ok(_convert(world, "imagenet", tmp_path / "out", "--input-range", "imagenet")[0])
    else:
        _ok(proc)
    (contract,) = json.loads((tmp_path / "out" / "manifest.json").read_text())["input_contract"]
    assert contract["source"] in ("probe", "option") and contract["mean"] == [123.675, 116.28, 103.53], contract
    _int8_close_to_float(world, "imagenet", tmp_path / "out" / "model_imagenet_int8.tflite")


def test_no_clear_winner_is_refused_and_the_option_then_wins(world, tmp_path):
    """A model that rescales every channel of every image to its own min..max scores the same under every
    candidate (each is a per-channel affine map with a positive scale): no guess."""
    proc = run_edgetool(
        "convert",
        world["models"]["minmax"],
        "--quant",
        "int8",
        "--calibration",
        world["images"] / "train",
        "-o",
        tmp_path / "out",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot tell what input 'image' takes" in proc.stderr and "--input-range" in proc.stderr
    assert "lead of 10%" in proc.stderr and not (tmp_path / "out").exists()
    proc = run_edgetool(
        "convert",
        world["models"]["minmax"],
        "--quant",
        "int8",
        "--calibration",
        world["images"] / "train",
        "--input-range",
        "0..1",
        "-o",
        tmp_path / "ok",
    )
    _ok(proc)


def test_minus_one_to_one_model_under_its_option(world, tmp_path):
    _ok(_convert(world, "pm1", tmp_path / "ok", "--input-range", "-1..1")[0])
    (contract,) = json.loads((tmp_path / "ok" / "manifest.json").read_text())["input_contract"]
    assert contract["source"] == "option" and contract["mean"] == [127.5] * 3
    _int8_close_to_float(world, "pm1", tmp_path / "ok" / "model_pm1_int8.tflite")


def test_unlabelled_image_folder_for_a_silent_model_is_refused(world, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in sorted((world["images"] / "train" / "one").iterdir())[:10]:
        shutil.copy(f, flat / f.name)
    proc = run_edgetool(
        "convert", world["models"]["x255"], "--quant", "int8", "--calibration", flat, "-o", tmp_path / "out2"
    )
    assert proc.returncode == 2 and "no class sub-folders" in proc.stderr and "--input-range" in proc.stderr


def test_demo_page_gets_the_contract_and_the_folder_labels(world, tmp_path):
    proc = run_edgetool(
        "demo", world["models"]["x255"], "-o", tmp_path / "site", "--calibration", world["images"] / "train"
    )
    text = _ok(proc)
    config = json.loads((tmp_path / "site" / "demo-config.json").read_text())
    entry = config["input"]
    assert entry["mean"] == [0.0] * 3 and entry["std"] == [255.0] * 3 and entry["range"] == [0.0, 1.0]
    assert (entry["channelOrder"], entry["resize"]) == ("RGB", "bilinear")
    assert config["labels"] == list(setups.CLASSES)
    assert "labels: 4 from the class folders" in text
    proc = run_edgetool("demo", world["models"]["x255"], "-o", tmp_path / "site2")
    text = _ok(proc)
    assert "labels: none" in text and "nothing says how its pixels are scaled" in text


def test_keras3_file_with_rescaling_inside(world, tmp_path):
    """A Keras-3 .keras (Rescaling to [-1, 1] inside): read from its config.json, raw pixels fed, int8 ≈ float."""
    model = setups.train_keras3(world["root"])
    proc = run_edgetool(
        "convert", model, "--quant", "int8", "--calibration", world["images"] / "train", "-o", tmp_path / "out"
    )
    _ok(proc)
    (contract,) = json.loads((tmp_path / "out" / "manifest.json").read_text())["input_contract"]
    assert contract["source"] == "model" and contract["std"] == [1.0] * 3, contract
    assert "keras3.keras's config: Rescaling" in contract["evidence"], contract
    world["oracle"]["keras3"] = np.load(world["root"] / "oracle_keras3.npy")
    setups.PREPROCESS.setdefault("keras3", lambda x: x)
    _int8_close_to_float(world, "keras3", tmp_path / "out" / "keras3_int8.tflite")
