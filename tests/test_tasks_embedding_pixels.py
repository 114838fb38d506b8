"""The embedding, image and heatmap tasks without TensorFlow: inference rules, SSIM against scikit-image's value,
recall@1 and PCK on hand-made cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge_tool.errors import DataError
from edge_tool.tasks import TaskContext, get_task
from edge_tool.tasks.embedding import recall_at_1, unit_rows
from edge_tool.tasks.image import psnr, ssim
from edge_tool.tasks.infer import infer_task

RNG = np.random.default_rng(3)
UNIT = RNG.normal(size=(9, 8))
UNIT /= np.linalg.norm(UNIT, axis=1, keepdims=True)


def _gauss_maps(n=6, size=16, k=3, sigma=1.0):
    yy, xx = np.mgrid[:size, :size]
    pts = RNG.integers(2, size - 2, (n, k, 2))
    maps = np.exp(-((yy[None, None] - pts[..., :1, None]) ** 2 + (xx[None, None] - pts[..., 1:, None]) ** 2) / 2)
    return np.moveaxis(maps, 1, -1).astype(np.float32), pts


@pytest.mark.parametrize(
    "shape, act, labels, unit, want, assumed",
    [
        ((9, 8), "l2norm", None, False, "embedding", False),
        ((9, 8), "linear", np.arange(9) % 3, True, "embedding", False),  # measured unit rows, identities
        ((9, 8), "linear", np.arange(9) % 3, False, "classification", False),  # same labels, no unit rows
        ((9, 3), "l2norm", RNG.normal(size=(9, 3)), False, "regression", False),  # unit direction vectors
        ((9, 8), "softmax", np.arange(9) % 3, True, "classification", False),  # a confident softmax stays one
        ((9, 16, 16, 1), "sigmoid", RNG.random((9, 16, 16, 1)), False, "image", False),  # denoiser, float targets
        ((9, 16, 16, 1), "linear", np.round(RNG.random((9, 16, 16)) * 255), False, "image", False),  # 0..255 whole
        ((9, 16, 16, 3), "sigmoid", _gauss_maps(9)[0], False, "heatmap", True),
        ((9, 16, 16, 1), "sigmoid", (RNG.random((9, 16, 16)) > 0.5).astype(np.int64), False, "segmentation", False),
        ((9, 16, 16, 3), "softmax", RNG.random((9, 16, 16, 3)), False, "segmentation", False),
    ],
)
def test_inference(shape, act, labels, unit, want, assumed):
    choice = infer_task({"p": shape}, "p", {"p": act}, labels, unit)
    assert (choice.name, choice.assumed) == (want, assumed), choice.reason


def test_unit_rows_tells_embeddings_from_confident_softmax():
    assert unit_rows(UNIT)
    assert not unit_rows(np.eye(8)[np.arange(9) % 8])  # one-hot probabilities have norm 1 too
    assert not unit_rows(UNIT * 1.1)


def test_recall_at_1_by_hand():
    # ids 0,0,1,1,2: sample 0's nearest is 1 (hit), 1's is 0 (hit), 2's is 0 (miss), 3's is 2 (hit); 4 is alone
    emb = np.array([[1, 0], [0.99, 0.1], [0.9, 0.3], [0.8, 0.5], [-1, 0]], np.float64)
    assert recall_at_1(emb, np.array([0, 0, 1, 1, 2])) == (0.75, 4)


def test_embedding_drift_and_labels():
    task, ctx = get_task("embedding"), TaskContext("p", ("p",))
    drift = task.drift(ctx)
    rot = UNIT.copy()
    rot[:, 0] *= -1
    drift.update({"p": UNIT}, {"p": UNIT}, None)
    drift.update({"p": UNIT}, {"p": UNIT * 3}, None)  # scale does not change the cosine
    assert drift.result()["mean_cosine"] == pytest.approx(1.0)
    assert np.array_equal(task.labels(np.array(["b", "a", "b"]), {}, ctx, Path("d")), [1, 0, 1])
    with pytest.raises(DataError, match="identities"):
        task.labels(np.array([0.5, 1.5]), {}, ctx, Path("d"))


def test_ssim_equals_scikit_image():
    rng = np.random.default_rng(7)
    a = rng.random((16, 20, 3))
    b = np.clip(a + rng.normal(0, 0.1, a.shape), 0, 1)
    c = (rng.random((12, 12)) * 255).round()
    d = np.clip(c + rng.normal(0, 20, c.shape), 0, 255).round()
    # skimage.metrics.structural_similarity(x, y, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
    # data_range=L[, channel_axis=-1]) on these arrays (scikit-image 0.25), pinned so the test needs no skimage
    assert ssim(a[None], b[None], 1.0)[0] == pytest.approx(0.9262836003385626, abs=1e-12)
    assert ssim(c[None], d[None], 255.0)[0] == pytest.approx(0.9648484432325024, abs=1e-12)
    assert ssim(a[None], a[None], 1.0)[0] == pytest.approx(1.0)
    assert ssim(a[None, :8, :8], b[None, :8, :8], 1.0) is None  # smaller than the window


def test_psnr_by_hand():
    x = np.zeros((1, 4, 4))
    assert psnr(x + 0.1, x, 1.0)[0] == pytest.approx(20.0)
    assert psnr(x, x, 1.0)[0] == 100.0


def test_heatmap_pck_and_error():
    maps, pts = _gauss_maps(4, 20, 2)
    task, ctx = get_task("heatmap"), TaskContext("p", ("p",))
    moved = np.roll(maps, 3, axis=2)  # every peak 3 px right: error 3, outside PCK@0.1 of 20 px (2 px)
    acc = task.scores(ctx)
    acc.update(None, {"p": moved}, maps)
    assert acc.result() == {"pck": 0.0, "keypoint_error": pytest.approx(3.0)}
    acc = task.scores(ctx)
    acc.update(None, {"p": np.roll(maps, 2, axis=1)}, maps)
    assert acc.result()["pck"] == 1.0
    empty = maps.copy()
    empty[0, ..., 0] = 0  # an invisible keypoint is not counted
    acc = task.scores(ctx)
    acc.update(None, {"p": maps}, empty)
    assert acc.result() == {"pck": 1.0, "keypoint_error": 0.0}
