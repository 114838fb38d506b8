"""Tiny Keras models of the kinds the demo page renders per task (exact GELU, multi-label sigmoid, segmentation,
waveform input, regression), saved as SavedModels for `edgetool demo` tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from edge_tool.models.signatures import load_serving_fn
from tests.edgetool_runs import REPO

SAMPLES = 2048  # the waveform model's input length
RATE = 8000  # and its sample rate (recorded with --sample-rate)


def _keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    from edge_tool.core.env import import_tf  # noqa: PLC0415  (imported after the set-up above)

    tf = import_tf()
    tf.keras.utils.set_random_seed(7)
    return tf, tf.keras


def gelu_model(path: Path) -> Path:
    """[N,8] -> exact GELU (Erfc in the graph: tensorflowjs 4.22 has no kernel) -> softmax over 3; calibration.npz."""
    tf, k = _keras()
    inp = k.Input((8,), name="features")
    x = k.layers.Dense(6)(inp)
    x = k.layers.Activation(lambda t: tf.keras.activations.gelu(t, approximate=False))(x)
    k.Model(inp, k.layers.Dense(3, activation="softmax")(x)).save(str(path), save_format="tf")
    np.savez(path / "calibration.npz", features=np.random.default_rng(0).normal(size=(32, 8)).astype(np.float32))
    return path


def token_ids(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """BERT-style int64 ``input_ids`` (1 = [CLS], words 2..21, 0 pads after 3..15 tokens) and ``attention_mask``."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, 22, size=(n, 16))
    ids[:, 0] = 1
    ids[np.arange(16)[None, :] >= rng.integers(3, 16, size=(n, 1))] = 0
    return {"input_ids": ids.astype(np.int64), "attention_mask": (ids != 0).astype(np.int64)}


def bert_model(path: Path) -> Path:
    """A BERT-tiny-like classifier: int64 input_ids and attention_mask [N,16], embedding, exact GELU (Erfc: no
    tensorflowjs kernel), mask-weighted mean pooling, softmax over 4; calibration.npz of both inputs."""
    tf, k = _keras()
    ids, mask = k.Input((16,), dtype="int64", name="input_ids"), k.Input((16,), dtype="int64", name="attention_mask")
    # untrained, yet its probabilities spread (0.02..0.56, top-1 varies) and ignoring the mask moves them by 0.2
    spread, head = k.initializers.RandomNormal, k.initializers.RandomNormal(stddev=1.0, seed=3)
    x = k.layers.Embedding(22, 8, embeddings_initializer=spread(stddev=0.5, seed=1))(ids)
    x = k.layers.Dense(12, activation="gelu", kernel_initializer=spread(stddev=0.5, seed=2))(x)  # exact GELU
    weights = tf.cast(mask, tf.float32)[:, :, None]
    pooled = tf.reduce_sum(x * weights, axis=1) / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0)
    k.Model([ids, mask], k.layers.Dense(4, activation="softmax", kernel_initializer=head)(pooled)).save(
        str(path), save_format="tf"
    )
    np.savez(path / "calibration.npz", **token_ids(32))
    return path


def multilabel_model(path: Path) -> Path:
    """[N,6] -> 4 independent sigmoid labels, biased so several are near 1 at once (a softmax would split them)."""
    _, k = _keras()
    inp = k.Input((6,), name="features")
    dense = k.layers.Dense(4, activation="sigmoid")
    model = k.Model(inp, dense(inp))
    w, _ = dense.get_weights()
    dense.set_weights([w * 0.3, np.array([3.5, 3.0, -1.0, 2.5], np.float32)])
    model.save(str(path), save_format="tf")
    (path / "labels.txt").write_text("cat\ndog\ncar\ntree\n")
    return path


def segmentation_model(path: Path) -> Path:
    """[N,16,16,3] image -> [N,16,16,4] per-pixel softmax (a conv net, same size)."""
    _, k = _keras()
    inp = k.Input((16, 16, 3), name="image")
    x = k.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    k.Model(inp, k.layers.Conv2D(4, 3, padding="same", activation="softmax")(x)).save(str(path), save_format="tf")
    return path


def audio_model(path: Path) -> Path:
    """[N, SAMPLES] waveform -> 3 class softmax (frames by a strided conv, pooled)."""
    _, k = _keras()
    inp = k.Input((SAMPLES,), name="waveform")
    x = k.layers.Reshape((SAMPLES, 1))(inp)
    x = k.layers.Conv1D(4, 64, strides=32, activation="relu")(x)
    x = k.layers.GlobalAveragePooling1D()(x)
    k.Model(inp, k.layers.Dense(3, activation="softmax")(x)).save(str(path), save_format="tf")
    return path


def regression_model(path: Path) -> Path:
    """[N,5] -> 2 linear values (price, area)."""
    _, k = _keras()
    inp = k.Input((5,), name="features")
    k.Model(inp, k.layers.Dense(2)(inp)).save(str(path), save_format="tf")
    (path / "labels.txt").write_text("price\narea\n")
    return path


def embedding_model(path: Path) -> Path:
    """[N,6] -> 8-d embedding through UnitNormalization (an L2-normalised output)."""
    _, k = _keras()
    inp = k.Input((6,), name="features")
    k.Model(inp, k.layers.UnitNormalization()(k.layers.Dense(8)(inp))).save(str(path), save_format="tf")
    return path


def video_model(path: Path) -> Path:
    """[N,4,8,8,3] frames -> 2 classes (Conv3D)."""
    _, k = _keras()
    inp = k.Input((4, 8, 8, 3), name="frames")
    x = k.layers.Conv3D(2, 3, padding="same", activation="relu")(inp)
    x = k.layers.GlobalAveragePooling3D()(x)
    k.Model(inp, k.layers.Dense(2, activation="softmax")(x)).save(str(path), save_format="tf")
    return path


def build(name: str, path: Path) -> Path:
    """Build model ``name`` (gelu, bert, multilabel, segmentation, audio, regression, embedding, video) at ``path`` in a fresh
    process with Keras 2 (TF_USE_LEGACY_KERAS=1 must be set before TensorFlow loads)."""
    code = f"from pathlib import Path; from tests.page_task_models import {name}_model as m; m(Path({str(path)!r}))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path


def serving_outputs(path: Path, x: np.ndarray | dict) -> np.ndarray:
    """The SavedModel's first output for ``x`` (an array for its one input, or {input name: array}; its serving
    signature, run by TensorFlow): the oracle."""
    _, fn, info = load_serving_fn(path)
    out = fn(**(x if isinstance(x, dict) else {info.inputs[0].name: x}))
    return np.asarray(out[info.outputs[0].name])
