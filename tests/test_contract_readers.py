"""The input contract in the readers (no TensorFlow): what an image folder gives the model under a contract,
checked against PIL + numpy by hand; layouts, channel order, resize method; the split-parent refusal; options;
Keras configs read as JSON."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from PIL import Image  # noqa: TID253  (tests are not the CLI: no start-up to keep light)

from edge_tool import calibration
from edge_tool.calibration.contract import RANGES, ImageContract
from edge_tool.contract.keras_config import input_scaling, keras_file_config
from edge_tool.contract.options import ContractOptions
from edge_tool.contract.probe import ProbeResult
from edge_tool.errors import UsageError


def _folder(root, size=(20, 12)):
    """root/<class>/ with PNG and JPEG files of different sizes and modes (RGB, L, P)."""
    rng = np.random.default_rng(1)
    for c, name in enumerate(("cat", "dog")):
        (root / name).mkdir(parents=True)
        for i in range(3):
            arr = rng.integers(0, 256, (size[1] + i, size[0] + 2 * i, 3), dtype=np.uint8)
            img = Image.fromarray(arr, "RGB")
            img = img.convert("L") if i == 1 else img.convert("P") if i == 2 else img
            ext = "png" if i == 2 or (i + c) % 2 else "jpg"  # P (palette) images exist as PNG only
            img.save(root / name / f"{i}.{ext}", quality=90)
    return root


def _by_hand(path, size, resample, mean, std, bgr=False):
    with Image.open(path) as img:
        arr = np.asarray(img.convert("RGB").resize(size, resample), dtype=np.float32)
    arr = arr[..., ::-1] if bgr else arr
    return (arr - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)


@pytest.mark.parametrize("name", list(RANGES))
def test_folder_under_a_contract_equals_pil_and_numpy_by_hand(tmp_path, name):
    root = _folder(tmp_path / "imgs")
    spec = calibration.InputSpec("img", "float32", (None, 16, 16, 3))
    mean, std = RANGES[name]
    contract = ImageContract("img", "NHWC", 16, 16, 3, "RGB", mean, std, "bilinear", "option", "")
    ds = calibration.load(root, [spec], calibration.LoadOptions(samples=None, images=(contract,)))
    files = sorted(root.rglob("*.*"))
    want = np.stack(
        [_by_hand(f, (16, 16), Image.BILINEAR, mean * (3 // len(mean)), std * (3 // len(std))) for f in files]
    )
    np.testing.assert_allclose(ds.inputs["img"], want, rtol=1e-6, atol=1e-5)
    assert ds.class_names == ("cat", "dog") and list(ds.labels) == [0, 0, 0, 1, 1, 1]


def test_nchw_bgr_nearest_layout(tmp_path):
    root = _folder(tmp_path / "imgs")
    spec = calibration.InputSpec("img", "float32", (None, 3, 8, 10))
    contract = ImageContract("img", "NCHW", 8, 10, 3, "BGR", (103.9, 116.8, 123.7), (1.0,), "nearest", "option", "")
    ds = calibration.load(root, [spec], calibration.LoadOptions(samples=None, images=(contract,)))
    first = sorted(root.rglob("*.*"))[0]
    want = _by_hand(first, (10, 8), Image.NEAREST, (103.9, 116.8, 123.7), (1.0, 1.0, 1.0), bgr=True)
    np.testing.assert_allclose(ds.inputs["img"][0], np.transpose(want, (2, 0, 1)), atol=1e-4)


def test_greyscale_nhw_input(tmp_path):
    root = _folder(tmp_path / "imgs")
    spec = calibration.InputSpec("img", "float32", (None, 9, 9))
    contract = ImageContract("img", "NHW", 9, 9, 1, "L", (0.0,), (255.0,), "area", "probe", "")
    ds = calibration.load(root, [spec], calibration.LoadOptions(samples=None, images=(contract,)))
    with Image.open(sorted(root.rglob("*.*"))[0]) as img:
        want = np.asarray(img.convert("L").resize((9, 9), Image.BOX), dtype=np.float32) / 255
    assert ds.inputs["img"].shape == (6, 9, 9)
    np.testing.assert_allclose(ds.inputs["img"][0], want, atol=1e-6)


def test_parent_of_splits_is_refused_naming_both_levels(tmp_path):
    for split in ("train", "val", "test"):
        _folder(tmp_path / "images" / split)
    spec = calibration.InputSpec("img", "float32", (None, 8, 8, 3))
    with pytest.raises(calibration.CalibrationError) as err:
        calibration.load(tmp_path / "images", [spec])
    assert "test, train, val" in str(err.value) and "cat, dog" in str(err.value) and "pass one split" in str(err.value)


def test_empty_class_folder_keeps_the_other_classes_indices(tmp_path):
    root = _folder(tmp_path / "imgs")
    (root / "ant").mkdir()
    ds = calibration.load(
        root, [calibration.InputSpec("img", "float32", (None, 8, 8, 3))], calibration.LoadOptions(samples=None)
    )
    assert ds.class_names == ("ant", "cat", "dog") and set(ds.labels.tolist()) == {1, 2}
    assert any("ant" in w for w in ds.warnings)


def test_contract_options_are_validated_together():
    assert ContractOptions("0..1").normalization() == ((0.0,), (255.0,))
    assert ContractOptions(None, None, (255.0,)).normalization() == ((0.0,), (255.0,))
    with pytest.raises(UsageError) as err:
        ContractOptions("0..2", (1.0,), (0.0,))
    text = str(err.value)
    assert "--input-range expects" in text and "give one" in text and "must not contain 0" in text


def test_probe_needs_a_clear_lead_and_a_floor():
    assert ProbeResult({"0..1": 0.89, "0..255": 0.31}, 64, 4, "d").clear_winner() == "0..1"
    assert ProbeResult({"0..1": 0.89, "-1..1": 0.84}, 64, 4, "d").clear_winner() is None  # lead < 10 points
    assert ProbeResult({"0..1": 0.45, "0..255": 0.25}, 64, 4, "d").clear_winner() is None  # under 47.5 % for 4
    assert ProbeResult({"0..1": 0.9, "0..255": 0.3}, 64, 4, "d").far_better("0..255") == "0..1"


def test_keras3_file_config_rescaling_is_read_without_loading(tmp_path):
    """A .keras zip's config.json (Keras 3 format, inbound nodes as keras_history) is read as JSON only."""
    config = {
        "class_name": "Functional",
        "config": {
            "layers": [
                {"class_name": "InputLayer", "name": "in", "config": {"name": "in"}, "inbound_nodes": []},
                {
                    "class_name": "Rescaling",
                    "name": "r",
                    "config": {"name": "r", "scale": 1 / 127.5, "offset": -1.0},
                    "inbound_nodes": [
                        {
                            "args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["in", 0, 0]}}],
                            "kwargs": {},
                        }
                    ],
                },
                {
                    "class_name": "Conv2D",
                    "name": "c",
                    "config": {"name": "c"},
                    "inbound_nodes": [
                        {
                            "args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["r", 0, 0]}}],
                            "kwargs": {},
                        }
                    ],
                },
            ]
        },
    }
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", b"not read")
    scaling = input_scaling(keras_file_config(path))
    mean, std = scaling.mean_std()
    assert mean == pytest.approx((127.5,)) and std == pytest.approx((127.5,)) and "Rescaling" in scaling.layers[0]


def test_keras2_preprocess_input_ops_compose():
    """tf.keras.applications' preprocess_input in a functional model: TFOpLambda truediv then subtract."""
    doc = {
        "class_name": "Functional",
        "config": {
            "layers": [
                {"class_name": "InputLayer", "config": {"name": "input_1"}, "name": "input_1", "inbound_nodes": []},
                {
                    "class_name": "TFOpLambda",
                    "config": {"name": "d", "function": "math.truediv"},
                    "name": "d",
                    "inbound_nodes": [["input_1", 0, 0, {"y": 127.5, "name": None}]],
                },
                {
                    "class_name": "TFOpLambda",
                    "config": {"name": "s", "function": "math.subtract"},
                    "name": "s",
                    "inbound_nodes": [["d", 0, 0, {"y": 1.0, "name": None}]],
                },
                {"class_name": "Dense", "config": {"name": "o"}, "name": "o", "inbound_nodes": [[["s", 0, 0, {}]]]},
            ]
        },
    }
    mean, std = input_scaling(doc).mean_std()
    assert mean == pytest.approx((127.5,)) and std == pytest.approx((127.5,))
