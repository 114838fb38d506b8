"""A Keras-3 model with augmentation layers inside (the Keras image-classification tutorial's ``data_augmentation``
Sequential before Rescaling and the convolutions): its ``.keras`` file converts exactly, the random layers left out
and named; its ``model.export()`` SavedModel, whose signature runs them (Keras 3 serves ``model.__call__`` without
``training=False``), is refused naming the layers, and the export the refusal shows converts exactly."""

from __future__ import annotations

import json

import pytest

from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process
from tests.schema_check import validated

pytestmark = pytest.mark.slow

TUTORIAL = """
import sys, numpy as np, keras
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).uniform(0, 255, (32, 16, 16, 3)).astype("float32")
y = (x[..., 0].mean(axis=(1, 2)) > x[..., 1].mean(axis=(1, 2))).astype("int64")
data_augmentation = keras.Sequential([keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1),
                                      keras.layers.RandomZoom(0.1), keras.layers.RandomContrast(0.2)])
model = keras.Sequential([keras.Input((16, 16, 3)), data_augmentation, keras.layers.Rescaling(1.0 / 255),
                          keras.layers.Conv2D(4, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(2)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, epochs=1, verbose=0)
model.save(sys.argv[1] + "/model.keras")
model.export(sys.argv[1] + "/exported", verbose=False)
"""
WAY_OUT = """
import sys, keras
model = keras.models.load_model(sys.argv[1] + "/model.keras")
exec(sys.argv[2].replace('"exported"', repr(sys.argv[1] + "/inference")))
"""
LAYERS = ("RandomFlip", "RandomRotation", "RandomZoom", "RandomContrast")


def test_augmentation_layers_are_left_out_or_refused_with_a_way_out_that_converts(tmp_path):
    run_script(TUTORIAL, tmp_path, legacy_keras=False)
    proc = edgetool_in_process("convert", tmp_path / "model.keras", "--allow-select-tf-ops", "-o", tmp_path / "a")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0, said
    assert "left out" in said and "identity at inference" in said
    manifest = validated(tmp_path / "a" / "manifest.json", "manifest")
    assert sorted(n.split(" (")[1][:-1] for n in manifest["source"]["inference_only"]) == sorted(LAYERS)
    entry = manifest["artifacts"][0]
    assert entry["tensors"]["flex_ops"] == [] and entry["self_check"]["ok"], entry  # no random op left in it
    assert entry["self_check"]["max_abs_error"] < 1e-5

    proc = edgetool_in_process("convert", tmp_path / "exported", "--allow-select-tf-ops", "-o", tmp_path / "b")
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2 and not (tmp_path / "b" / "manifest.json").exists(), said
    assert all(f"({name})" in said for name in LAYERS) and "identity at inference" in said
    code = said.split("export it so in Keras 3: ", 1)[1].split(" (the layers, by graph scope:")[0]
    assert "training=False" in code and "shape=(None, 16, 16, 3)" in code
    run_script(WAY_OUT, tmp_path, code, legacy_keras=False)
    proc = edgetool_in_process("convert", tmp_path / "inference", "-o", tmp_path / "c")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json.loads((tmp_path / "c" / "manifest.json").read_text())["artifacts"][0]
    assert entry["self_check"]["ok"] and entry["self_check"]["max_abs_error"] < 1e-5, entry
