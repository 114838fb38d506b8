"""Model metadata apps load without code: MediaPipe's ImageClassifier runs edgetool's .tflite with the labels and
normalization embedded by ``convert``, and agrees with LiteRT; model.json carries the labels; demo and inspect
read them; hostile metadata is reported, never trusted."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edge_tool.metadata.reader import read_metadata
from edge_tool.metadata.writer import _labelled_output
from edge_tool.models.labelmap import classes_outputs
from tests.edgetool_runs import edgetool_in_process
from tests.hostile.harness import Case, run_case
from tests.oracles.litert_outputs import litert_outputs

LABELS = ["zero red", "zero blue", "one red", "one blue", "two red", "zwei blau ü"]
N_EVAL = 160

# A batch-1-capable RGB classifier on learnable synthetic images: digits 0-2 (sklearn's bundled 8x8 digits upscaled
# to 32x32) tinted red or blue, so the class depends on shape AND colour (a channel-order or normalization error in
# an app changes its answers). Raw 0..255 pixels in, a Rescaling layer inside, softmax over 6 classes out.
_RGB_MODEL_SCRIPT = (
    """
import sys, numpy as np, tf_keras as keras
from sklearn.datasets import load_digits
out, labels = sys.argv[1], sys.argv[2:]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
d = load_digits()
keep = d.target < 3
digits, target = d.images[keep] / 16.0, d.target[keep]
tint = rng.integers(0, 2, len(target))
col = np.array([[0.9, 0.25, 0.2], [0.2, 0.3, 0.9]])[tint] + rng.uniform(-0.1, 0.1, (len(target), 3))
big = np.kron(digits, np.ones((4, 4)))[..., None]
x = np.clip(big * col[:, None, None, :] * 255 + rng.uniform(0, 30, big.shape[:3] + (3,)), 0, 255).round()
x, y = x.astype(np.float32), target * 2 + tint
order = rng.permutation(len(y))
x, y = x[order], y[order]
n_eval = int(%d)
inp = keras.Input((32, 32, 3), name="image")
h = keras.layers.Rescaling(1 / 255)(inp)
h = keras.layers.Conv2D(8, 3, strides=2, activation="relu")(h)
h = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(h)
h = keras.layers.Flatten()(h)
probs = keras.layers.Dense(6, activation="softmax", name="probs")(h)
model = keras.Model(inp, probs)
model.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x[n_eval:], y[n_eval:], epochs=15, batch_size=32, verbose=0)
model.save(out, save_format="tf")
np.savez(out + "/eval.npz", x=x[:n_eval], y=y[:n_eval])
np.savez(out + "/calibration.npz", x=x[n_eval:n_eval + 100], y=y[n_eval:n_eval + 100])
with open(out + "/labels.txt", "w", encoding="utf-8") as f:
    f.write("\\n".join(labels) + "\\n")
"""
    % N_EVAL
)


@pytest.fixture(scope="module")
def rgb_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rgb") / "model"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", _RGB_MODEL_SCRIPT, str(out), *LABELS],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def converted(rgb_model, tmp_path_factory) -> Path:
    """fp32 + int8 .tflite and TFJS of the RGB model, labels from --labels (a copy elsewhere, to test the option)."""
    labels = tmp_path_factory.mktemp("labels") / "my-labels.txt"
    labels.write_text("\n".join(LABELS) + "\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("conv") / "out"
    proc = edgetool_in_process(
        "convert", rgb_model, "--quant", "fp32,int8", "--format", "all", "--labels", labels, "-o", out
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def converted_uint8(rgb_model, tmp_path_factory) -> Path:
    """int8 with uint8 I/O (labels.txt beside the model): MediaPipe feeds such a model the raw pixels."""
    out = tmp_path_factory.mktemp("conv-u8") / "out"
    proc = edgetool_in_process("convert", rgb_model, "--quant", "int8", "--io-type", "uint8", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _mediapipe_top1(path: Path, x: np.ndarray) -> list[tuple[int, str]]:
    """(index, category name) of MediaPipe ImageClassifier's top result per image, fed as uint8 SRGB images."""
    import mediapipe as mp
    from mediapipe.tasks.python import vision
    from mediapipe.tasks.python.core.base_options import BaseOptions

    options = vision.ImageClassifierOptions(base_options=BaseOptions(model_asset_path=str(path)), max_results=1)
    results = []
    with vision.ImageClassifier.create_from_options(options) as classifier:
        for img in x:
            image = mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(img.astype(np.uint8)))
            top = classifier.classify(image).classifications[0].categories[0]
            results.append((top.index, top.category_name))
    return results


def test_python_api_imports_light():
    """``from edge_tool import convert, ...`` must not import TensorFlow, tensorflowjs or mediapipe."""
    code = (
        "import sys; from edge_tool import convert, evaluate, inspect, demo, train, read_metadata; "
        "print([m for m in ('tensorflow', 'tensorflowjs', 'mediapipe', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_vendored_schema_is_mediapipes_generated_file():
    """edge_tool/metadata ships mediapipe's flatc-generated schema classes byte for byte (nothing hand-written)."""
    spec = importlib.util.find_spec("mediapipe")
    assert spec is not None and spec.origin, "mediapipe is not installed (scripts/setup.sh installs it)"
    theirs = Path(spec.origin).parent / "tasks" / "metadata" / "metadata_schema_py_generated.py"
    ours = Path(__file__).resolve().parents[1] / "edge_tool" / "metadata" / "metadata_schema_py_generated.py"
    assert hashlib.sha256(ours.read_bytes()).digest() == hashlib.sha256(theirs.read_bytes()).digest()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fp32", "int8", "int8-uint8-io"])
def test_mediapipe_image_classifier_agrees_with_litert_and_eval(rgb_model, mode, request, tmp_path):
    uint8_io = mode == "int8-uint8-io"
    path = (
        request.getfixturevalue("converted_uint8") / "model_int8.tflite"
        if uint8_io
        else request.getfixturevalue("converted") / f"model_{mode}.tflite"
    )
    data = np.load(rgb_model / "eval.npz")
    x, y = data["x"], data["y"]
    assert len(x) >= 100
    mp_top = _mediapipe_top1(path, x)
    # float I/O: LiteRT gets the 0..255 floats; uint8 I/O: the raw uint8 pixels (the input scale is ~1, zero point 0)
    lite_top = litert_outputs(path, x.astype(np.uint8) if uint8_io else x).argmax(axis=1)
    agree = sum(i == int(j) for (i, _), j in zip(mp_top, lite_top))
    assert agree == len(x), f"MediaPipe and LiteRT top-1 agree on {agree}/{len(x)} images"
    assert all(name == LABELS[i] for i, name in mp_top), "category names must come from the embedded labels"
    report = tmp_path / "eval.json"
    proc = edgetool_in_process(
        "eval",
        path,
        "--reference",
        rgb_model,
        "--data",
        rgb_model / "eval.npz",
        "--runs",
        "5",
        "--warmup",
        "1",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(report.read_text())["results"][0]
    mp_accuracy = float(np.mean([i == t for (i, _), t in zip(mp_top, y)]))
    assert row["accuracy"] == pytest.approx(mp_accuracy, abs=1e-9)
    assert mp_accuracy > 0.9  # the model really learnt shape and colour


@pytest.mark.slow
def test_tfjs_model_json_and_demo_carry_the_labels(converted, tmp_path):
    doc = json.loads((converted / "tfjs" / "model.json").read_text(encoding="utf-8"))
    assert doc["userDefinedMetadata"]["labels"] == LABELS
    assert doc["userDefinedMetadata"]["input_normalization"] == {"mean": [0.0], "std": [1.0]}
    proc = edgetool_in_process("demo", converted / "tfjs", "-o", tmp_path / "site")  # no --labels, no labels.txt beside
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "site" / "demo-config.json").read_text(encoding="utf-8"))["labels"] == LABELS


@pytest.mark.slow
def test_inspect_shows_embedded_metadata(converted):
    proc = edgetool_in_process("inspect", converted / "model_fp32.tflite", "--json")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)["tflite"]["metadata"]
    assert meta["name"] == "model" and meta["min_parser_version"] == "1.0.0" and not meta["problems"]
    assert meta["labels"] == LABELS and meta["label_count"] == 6
    assert meta["inputs"][0]["content"] == "image (RGB)"
    assert meta["inputs"][0]["normalization"] == {"mean": [0.0], "std": [1.0]}
    assert meta["outputs"][0]["labels_file"] == "labels.txt"
    text = edgetool_in_process("inspect", converted / "model_fp32.tflite")
    assert text.returncode == 0 and "6: 'zero red', 'zero blue'" in text.stdout


def _with_archive(tflite: bytes, members: dict[str, bytes]) -> bytes:
    """``tflite`` with its appended zip replaced by one holding ``members`` (names and bytes as given)."""
    start = tflite.rfind(b"PK\x03\x04")
    assert start > 0
    out = io.BytesIO(tflite[:start])
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a") as zf:
        for name, content in members.items():
            zf.writestr(zipfile.ZipInfo(name), content)
    return out.getvalue()


@pytest.mark.slow
def test_hostile_metadata_is_reported_not_trusted(converted, tmp_path):
    good = (converted / "model_fp32.tflite").read_bytes()
    bad_utf8 = read_metadata(_with_archive(good, {"labels.txt": b"ok\n\xff\xfe broken\n"}))
    assert not bad_utf8.labels and any("not UTF-8" in p for p in bad_utf8.problems)
    escaping = read_metadata(_with_archive(good, {"../labels.txt": b"a\n", "labels.txt/../../x": b"b\n"}))
    assert escaping.packed_files == () and any("directories" in p for p in escaping.problems)
    assert any("carries no such file" in p for p in escaping.problems)
    bomb = read_metadata(_with_archive(good, {"labels.txt": b"x" * (5 * 1024 * 1024)}))
    assert not bomb.labels and any("not read" in p for p in bomb.problems)
    hostile = tmp_path / "hostile.tflite"
    hostile.write_bytes(_with_archive(good, {"labels.txt": b"\x1b[31mred\x1b[0m\n[bold]x[/bold]\n" + b"a\n" * 4}))
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = edgetool_in_process("inspect", hostile)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[31m" not in proc.stdout and "\\x1b[31mred" in proc.stdout and "[bold]x[/bold]" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing extracted


@pytest.mark.slow
def test_bad_labels_are_refused_before_writing(rgb_model, tmp_path):
    (tmp_path / "five.txt").write_text("a\nb\nc\nd\ne\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\n" * 6)
    for case in (
        Case(
            "label count",
            ("convert", str(rgb_model), "--labels", "{root}/five.txt", "-o", "{root}/out"),
            names=("five.txt has 5 labels, but no output", "[N, 5]"),
        ),
        Case(
            "labels not UTF-8",
            ("convert", str(rgb_model), "--labels", "{root}/bad.txt", "-o", "{root}/out"),
            names=("bad.txt is not UTF-8",),
        ),
        Case(
            "--no-metadata with --labels",
            ("convert", str(rgb_model), "--labels", "{root}/five.txt", "--no-metadata", "-o", "{root}/out"),
            names=("--no-metadata",),
        ),
        Case(
            "--input-std 0",
            ("convert", str(rgb_model), "--input-std", "0", "-o", "{root}/out"),
            names=("--input-std must not contain 0",),
        ),
    ):
        run_case(case, tmp_path)


def test_labels_name_per_pixel_classes_of_a_segmentation_output():
    """labels.txt of a U-Net names the last axis of its [N, H, W, K] mask (as TFLite segmenters' metadata does); an
    [N, K] output still wins, and a count no output has on its last axis finds none."""
    assert _labelled_output([[1, 16, 16, 3]], 3) == 0
    assert _labelled_output([[1, 16, 16, 3], [1, 3]], 3) == 1
    assert _labelled_output([[1, 16, 16, 4], [1, 1]], 3) is None
    mask = SimpleNamespace(name="mask", shape=[None, 16, 16, 3])
    assert classes_outputs(SimpleNamespace(outputs=[mask]), 3) == [mask]
    assert classes_outputs(SimpleNamespace(outputs=[mask]), 5) == []
