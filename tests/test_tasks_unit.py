"""The eval task registry without TensorFlow: inference rules, label checks, and streaming metrics that equal
scikit-learn's on the whole arrays whatever the batching."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge_tool.errors import DataError
from edge_tool.tasks import TASK_NAMES, TASKS, TaskContext, get_task
from edge_tool.tasks.infer import infer_task

sk = pytest.importorskip("sklearn.metrics")


def test_every_task_is_registered_with_its_main_metric_among_its_keys():
    assert set(TASKS) == set(TASK_NAMES)
    for task in TASKS.values():
        assert task.main_metric in task.metric_keys


@pytest.mark.parametrize(
    "shapes, act, labels, want, assumed",
    [
        ({"p": (9, 10)}, "softmax", None, "classification", False),
        ({"p": (9, 3)}, "sigmoid", None, "multilabel", False),
        ({"p": (9, 1)}, "linear", np.linspace(25.0, 321.0, 9), "regression", False),
        ({"p": (9, 1)}, "linear", None, "regression", False),
        ({"p": (9, 8, 8, 3)}, "softmax", None, "segmentation", False),
        ({"p": (9, 8, 8, 3)}, "unknown", np.zeros((9, 8, 8), np.int64), "segmentation", False),
        ({"p": (9, 4)}, "linear", np.eye(4)[np.arange(9) % 4] + np.eye(4)[(np.arange(9) + 1) % 4], "multilabel", True),
        ({"p": (9, 4)}, "linear", np.arange(9) % 4, "classification", False),
        ({"p": (9, 4)}, "unknown", None, "classification", True),
        ({"boxes": (9, 4), "p": (9, 3)}, "softmax", np.arange(9) % 3, "detection", False),
        ({"p": (9, 20, 5)}, "softmax", None, "segmentation", False),  # a class per time step, not one arg-max
        ({"p": (9, 20, 2)}, "linear", np.random.default_rng(0).normal(size=(9, 20, 2)), "regression", False),
        ({"p": (9, 16, 16, 3)}, "linear", np.full((9, 3, 2), 7.5), "keypoints", False),  # (x, y) per map
        ({"p": (9, 16, 16, 3)}, "sigmoid", np.full((9, 3, 3), 7.0), "keypoints", False),  # (x, y, visible)
    ],
)
def test_inference(shapes, act, labels, want, assumed):
    primary = "p" if "p" in shapes else next(iter(shapes))
    choice = infer_task(shapes, primary, {primary: act}, labels)
    assert (choice.name, choice.assumed) == (want, assumed), choice.reason
    assert choice.reason


def _stream(task_name: str, ctx: TaskContext, out: np.ndarray, labels: np.ndarray, sizes=(7, 1, 30, 64)):
    task = get_task(task_name)
    acc, start, i = task.scores(ctx), 0, 0
    while start < len(out):
        n = sizes[i % len(sizes)]
        acc.update(None, {ctx.primary: out[start : start + n]}, labels[start : start + n])
        start, i = start + n, i + 1
    return acc.result()


def test_streaming_regression_equals_sklearn():
    rng = np.random.default_rng(0)
    y = rng.normal(100, 30, (200, 2))
    pred = y + rng.normal(0, 20, (200, 2))
    got = _stream("regression", TaskContext("p", ("p",)), pred, y)
    assert got["mae"] == pytest.approx(sk.mean_absolute_error(y, pred), rel=1e-12)
    assert got["rmse"] == pytest.approx(np.sqrt(sk.mean_squared_error(y, pred)), rel=1e-12)
    assert got["r2"] == pytest.approx(sk.r2_score(y, pred), rel=1e-10)


def test_streaming_multilabel_and_segmentation_equal_sklearn():
    rng = np.random.default_rng(1)
    y = (rng.random((150, 5)) < 0.3).astype(np.int64)
    y[:, 4] = 0  # a label never true: scored 0 when never predicted either, as scikit-learn's default
    p = np.clip(y * 0.7 + rng.random((150, 5)) * 0.5, 0, 1)
    p[:, 4] = 0.1
    got = _stream("multilabel", TaskContext("p", ("p",), threshold=0.5), p, y)
    assert got["f1_macro"] == pytest.approx(sk.f1_score(y, p >= 0.5, average="macro", zero_division=0), abs=1e-12)
    assert got["hamming"] == pytest.approx(sk.hamming_loss(y, p >= 0.5), abs=1e-12)
    masks = rng.integers(0, 4, (40, 6, 5))
    scores = rng.random((40, 6, 5, 4)) + 0.8 * np.eye(4)[masks]
    got = _stream("segmentation", TaskContext("p", ("p",)), scores, masks)
    pred = scores.argmax(-1).reshape(-1)
    assert got["pixel_accuracy"] == pytest.approx(np.mean(pred == masks.reshape(-1)), abs=1e-12)
    assert got["miou"] == pytest.approx(sk.jaccard_score(masks.reshape(-1), pred, average="macro"), abs=1e-12)


def test_streaming_classification_per_class_and_confusion():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 100)
    scores = rng.random((100, 3)) + 0.6 * np.eye(3)[y]
    got = _stream("classification", TaskContext("p", ("p",), top_k=5, class_names=("a", "b", "c")), scores, y)
    pred = scores.argmax(1)
    assert got["accuracy"] == pytest.approx(np.mean(pred == y)) and got["top_k"] is None
    assert got["confusion_matrix"]["counts"] == sk.confusion_matrix(y, pred).tolist()
    assert [c["label"] for c in got["per_class"]] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "task, labels, shape, needle",
    [
        ("classification", np.array([0, 5, 1]), (3, 4), "0..3"),
        ("classification", np.array([0.5, 1.0, 2.0]), (3, 4), "non-integer"),
        ("multilabel", np.array([[0, 2, 1]] * 3), (3, 3), "other than 0 and 1"),
        ("multilabel", np.zeros((3, 2)), (3, 3), "(n, 3)"),
        ("regression", np.zeros((3, 2)), (3, 1), "1 value(s) per sample"),
        ("segmentation", np.zeros((3, 8, 7), np.int64), (3, 8, 8, 3), "(n, 8, 8)"),
        ("segmentation", np.full((3, 8, 8), 3), (3, 8, 8, 3), "0..2"),
    ],
)
def test_labels_that_do_not_fit_name_both_sides_and_the_way_out(task, labels, shape, needle):
    with pytest.raises(DataError) as err:
        get_task(task).labels(labels, {"p": np.zeros(shape)}, TaskContext("p", ("p",)), Path("d.npz"))
    assert needle in str(err.value) and "--task" in str(err.value)


def test_label_forms_are_normalised():
    ctx = TaskContext("p", ("p",))
    onehot = np.eye(3)[[2, 0, 1]]
    assert get_task("classification").labels(onehot, {"p": np.zeros((3, 3))}, ctx, Path("d")).tolist() == [2, 0, 1]
    masks = np.zeros((2, 4, 4, 1))
    assert get_task("segmentation").labels(masks, {"p": np.zeros((2, 4, 4, 3))}, ctx, Path("d")).shape == (2, 4, 4)


def test_keypoint_labels_drop_invisible_points_and_refuse_normalised_coordinates():
    ctx, ref = TaskContext("p", ("p",), input_size=(32, 48)), {"p": np.zeros((2, 16, 24, 2))}
    got = get_task("keypoints").labels(np.array([[[4.0, 5, 2], [9, 9, 0]]] * 2), ref, ctx, Path("d"))
    assert got[0].tolist() == [[4, 5, 1], [0, 0, 0]]
    yx = TaskContext("p", ("p",), input_size=(32, 48), keypoint_order="yx")
    assert get_task("keypoints").labels(np.full((2, 2, 2), [5.0, 4.0]), ref, yx, Path("d"))[0, 0].tolist() == [4, 5, 1]
    with pytest.raises(DataError, match="look normalised"):
        get_task("keypoints").labels(np.full((2, 2, 2), 0.5), ref, ctx, Path("d"))
