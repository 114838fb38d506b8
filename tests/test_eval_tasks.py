"""eval beyond single-label classification: regression, multi-label, segmentation and a two-head detection-style
model, each through ``edgetool eval`` (fp32 and int8 .tflite from the raw TFLiteConverter), checked against
metrics computed here with scikit-learn / numpy on the reference's and LiteRT's own raw outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from edge_tool.qat.finetune import predict
from edge_tool.qat.pipeline import QatOptions, run_qat
from edge_tool.qat.source import import_stack
from tests.edgetool_runs import REPO, edgetool_in_process, run_edgetool

# not in the quick tier: trains a model per task (~1 min of the quick tier under load)
pytestmark = pytest.mark.slow

sklearn_metrics = pytest.importorskip("sklearn.metrics")

QUICK = ("--runs", "3", "--warmup", "1")


@pytest.fixture(scope="module")
def task_models(tmp_path_factory):
    """tests/task_models.py's models (each with eval.npz, fp32.tflite, int8.tflite)."""
    root = tmp_path_factory.mktemp("tasks")
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "task_models.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
        env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def _reference(model_dir, x) -> dict:
    """The SavedModel's serving signature (TF2 loader) on x: {output name: float64 array}."""
    import tensorflow as tf

    fn = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
    (name,) = fn.structured_input_signature[1]
    return {k: v.numpy().astype(np.float64) for k, v in fn(**{name: tf.constant(x)}).items()}


def _litert(path, x) -> dict:
    """LiteRT's signature runner, one sample at a time: {output name: float64 array}."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner()
    (name,) = runner.get_input_details()
    rows = [runner(**{name: x[i : i + 1]}) for i in range(len(x))]
    return {k: np.concatenate([r[k] for r in rows]).astype(np.float64) for k in rows[0]}


def _eval(root, task: str, *extra: str, artefacts=("fp32.tflite", "int8.tflite")):
    d = root / task
    out = d / f"eval_{len(list(d.glob('eval_*.json')))}.json"
    proc = edgetool_in_process(
        "eval", *(d / a for a in artefacts), "-r", d / "model", "-d", d / "eval.npz", *QUICK, "--json", out, *extra
    )
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def _rows(doc) -> dict:
    return {r["artifact"]: r for r in doc["results"]}


def test_regression_metrics_drift_and_max_error(task_models):
    d = task_models / "regression"
    data = np.load(d / "eval.npz")
    x, y = data["x"], data["y"]
    proc, doc = _eval(task_models, "regression", "--max-error", "1e9", "--max-drop", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["task"]["name"] == "regression" and not doc["task"]["assumed"]
    ref = _reference(d / "model", x)["value"][:, 0]
    r2_ref = sklearn_metrics.r2_score(y, ref)
    assert doc["reference"]["metrics"]["r2"] == pytest.approx(r2_ref, rel=1e-6)
    for name, row in _rows(doc).items():
        pred = _litert(d / name, x)["value"][:, 0]
        assert set(row["metrics"]) == {"mae", "rmse", "r2"}
        assert row["metrics"]["mae"] == pytest.approx(sklearn_metrics.mean_absolute_error(y, pred), rel=1e-6)
        assert row["metrics"]["rmse"] == pytest.approx(np.sqrt(sklearn_metrics.mean_squared_error(y, pred)), rel=1e-6)
        assert row["metrics"]["r2"] == pytest.approx(sklearn_metrics.r2_score(y, pred), rel=1e-6)
        assert row["metric_drop"] == pytest.approx(r2_ref - sklearn_metrics.r2_score(y, pred), abs=1e-6)
        assert row["drift"]["max_abs_error"] == pytest.approx(np.max(np.abs(pred - ref)), abs=1e-4)
        assert row["drift"]["mean_abs_error"] == pytest.approx(np.mean(np.abs(pred - ref)), abs=1e-4)
        assert row["accuracy"] is None and row["top1_agreement"] is None  # no "100 % agreement" of one value
    assert _rows(doc)["int8.tflite"]["drift"]["max_abs_error"] > 1e-3  # int8 really differs: the gate can fail
    broken, _ = _eval(task_models, "regression", "--max-error", "1e-3", artefacts=("int8.tflite",))
    assert broken.returncode == 1 and "int8.tflite: max abs error" in broken.stderr + broken.stdout
    assert "exceeds --max-error 0.001" in broken.stderr + broken.stdout


def test_regression_max_drop_gates_r2(task_models):
    """An artefact with random weights: its R² falls far below the reference's, so --max-drop fails it."""
    proc, doc = _eval(task_models, "regression", "--max-drop", "0.05", artefacts=("fp32.tflite", "untrained.tflite"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "untrained.tflite: r2 drop" in out and "fp32.tflite: r2 drop" not in out
    assert _rows(doc)["untrained.tflite"]["metric_drop"] > 0.05 >= _rows(doc)["fp32.tflite"]["metric_drop"]
    ok, _ = _eval(task_models, "regression", "--max-drop", "0.05", artefacts=("fp32.tflite",))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_multilabel_metrics_are_per_label(task_models):
    d = task_models / "multilabel"
    data = np.load(d / "eval.npz")
    x, y = data["x"], data["y"]
    proc, doc = _eval(task_models, "multilabel", "--max-drop", "0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["task"]["name"] == "multilabel" and doc["task"]["main_metric"] == "f1_macro"
    ref = _reference(d / "model", x)
    (key,) = ref
    for name, row in _rows(doc).items():
        pred = _litert(d / name, x)[key]
        decided = (pred >= 0.5).astype(int)
        assert set(row["metrics"]) == {"f1_macro", "hamming"}
        assert row["metrics"]["f1_macro"] == pytest.approx(
            sklearn_metrics.f1_score(y, decided, average="macro", zero_division=0), abs=1e-9
        )
        assert row["metrics"]["hamming"] == pytest.approx(sklearn_metrics.hamming_loss(y, decided), abs=1e-9)
        assert row["drift"]["label_agreement"] == pytest.approx(np.mean(decided == (ref[key] >= 0.5)), abs=1e-9)
        assert row["accuracy"] is None  # never "first positive tag" accuracy
    # the multi-hot rows really have several positive tags (the case that used to be argmaxed)
    assert (y.sum(axis=1) > 1).mean() > 0.3


def test_segmentation_metrics_are_per_pixel(task_models):
    d = task_models / "segmentation"
    data = np.load(d / "eval.npz")
    x, masks = data["x"], data["y"]
    proc, doc = _eval(task_models, "segmentation", "--max-drop", "0.2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["task"]["name"] == "segmentation"
    ref = _reference(d / "model", x)
    (key,) = ref
    ref_cls = ref[key].argmax(-1)
    for name, row in _rows(doc).items():
        cls = _litert(d / name, x)[key].argmax(-1)
        assert set(row["metrics"]) == {"pixel_accuracy", "miou"}
        assert row["metrics"]["pixel_accuracy"] == pytest.approx(np.mean(cls == masks), abs=1e-9)
        assert row["metrics"]["miou"] == pytest.approx(
            sklearn_metrics.jaccard_score(masks.reshape(-1), cls.reshape(-1), average="macro"), abs=1e-9
        )
        agreement = np.mean(cls == ref_cls)
        assert row["drift"]["pixel_agreement"] == pytest.approx(agreement, abs=1e-9)
        assert row["top1_agreement"] == pytest.approx(agreement, abs=1e-9)
    assert _rows(doc)["int8.tflite"]["top1_agreement"] > 0.9  # per pixel, not one arg-max of the flat output


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of corner boxes written out per box (independent of edgetool's vectorised version)."""
    out = []
    for p, q in zip(a.reshape(-1, 4), b.reshape(-1, 4)):
        p = [min(p[0], p[2]), min(p[1], p[3]), max(p[0], p[2]), max(p[1], p[3])]
        q = [min(q[0], q[2]), min(q[1], q[3]), max(q[0], q[2]), max(q[1], q[3])]
        iw, ih = max(0.0, min(p[2], q[2]) - max(p[0], q[0])), max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
        union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - iw * ih
        out.append(iw * ih / union if union > 0 else float(np.array_equal(p, q)))
    return np.asarray(out)


def test_detection_heads_per_output_error_and_box_iou(task_models):
    d = task_models / "detection"
    x = np.load(d / "eval.npz")["x"]
    proc, doc = _eval(task_models, "detection", "--max-drop", "0.5", "--max-error", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["task"]["name"] == "detection" and "boxes" in doc["task"]["reason"]
    ref = _reference(d / "model", x)
    for name, row in _rows(doc).items():
        out = _litert(d / name, x)
        assert set(row["metrics"]) == {"per_output", "box_iou"}
        per = row["metrics"]["per_output"]
        assert set(per) == {"boxes", "classes"}
        for head in ("boxes", "classes"):
            assert per[head]["max_abs_error"] == pytest.approx(np.max(np.abs(out[head] - ref[head])), abs=1e-4)
        assert per["classes"]["agreement"] == pytest.approx(
            np.mean(out["classes"].argmax(1) == ref["classes"].argmax(1)), abs=1e-9
        )
        assert row["metrics"]["box_iou"] == pytest.approx(np.mean(_iou(out["boxes"], ref["boxes"])), abs=1e-4)
    assert _rows(doc)["int8.tflite"]["metrics"]["box_iou"] < 1.0


def test_classification_report_names_classes_and_hides_empty_top_k(task_models, tmp_path):
    d = task_models / "classification3"
    data = np.load(d / "eval.npz")
    x, y = data["x"], data["y"]
    html = tmp_path / "report.html"
    proc, doc = _eval(task_models, "classification3", "--top-k", "5", "--html", str(html))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ref = _reference(d / "model", x)
    (key,) = ref
    for name, row in _rows(doc).items():
        pred = _litert(d / name, x)[key].argmax(1)
        m = row["metrics"]
        assert set(m) == {"accuracy", "top_k", "per_class", "confusion_matrix"}
        assert m["accuracy"] == pytest.approx(np.mean(pred == y), abs=1e-9) and m["top_k"] is None
        assert m["confusion_matrix"]["labels"] == ["zero", "one", "two"]
        assert m["confusion_matrix"]["counts"] == sklearn_metrics.confusion_matrix(y, pred, labels=[0, 1, 2]).tolist()
        assert [c["label"] for c in m["per_class"]] == ["zero", "one", "two"]
        for c in m["per_class"]:
            assert c["accuracy"] == pytest.approx(np.mean(pred[y == c["index"]] == c["index"]), abs=1e-9)
    page = html.read_text()
    assert "Confusion matrix: int8.tflite" in page and "Per-class accuracy" in page
    for label in ("zero", "one", "two"):
        assert f"<th>{label}</th>" in page
    assert "top-k" not in page  # 3 classes, k = 5: no empty top-k column


def test_labels_that_do_not_fit_the_task_exit_2_naming_it(task_models):
    proc, _ = _eval(task_models, "regression", "--task", "classification", artefacts=("fp32.tflite",))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert "labels" in err and "--task" in err and "classification" in err


@pytest.mark.slow
def test_qat_trains_multilabel_with_binary_cross_entropy_and_scores_f1(task_models):
    """Multi-hot labels reach QAT as they are (not "first positive tag"); the best epoch is picked on f1_macro."""
    d = task_models / "multilabel"
    data = np.load(d / "eval.npz")
    run = run_qat(
        d / "model", data["x"], data["y"], QatOptions(epochs=1, batch_size=32, strategy="default", replicas=1)
    )
    (head,) = run.heads
    _, keras, _ = import_stack()
    assert head.task == "multilabel" and isinstance(head.loss(keras), keras.losses.BinaryCrossentropy)
    held_y = run.held_out.y[head.name]
    assert held_y.shape[1] == 3 and (held_y.sum(axis=1) > 1).any()
    out = predict(run.model, run.held_out.inputs(list(run.model.input_names)), 1)[0]
    best = next(h for h in run.notes["history"] if h["epoch"] == run.notes["best_epoch"])
    want = sklearn_metrics.f1_score(
        held_y, out >= (0.5 if head.probabilities else 0.0), average="macro", zero_division=0
    )
    assert best["held_out_accuracy"] == pytest.approx(want, abs=1e-6)


@pytest.mark.slow
def test_convert_qat_takes_masks_and_auto_budgets_r2(task_models, tmp_path):
    seg = task_models / "segmentation"
    proc = run_edgetool(
        "convert",
        seg / "model",
        "--quant",
        "qat",
        "--train-data",
        seg / "eval.npz",
        "--calibration",
        seg / "eval.npz",
        "--qat-epochs",
        "1",
        "-o",
        tmp_path / "qat",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # was: "labels: expected shape (n,) or (n, 1)"
    record = json.loads((tmp_path / "qat" / "manifest.json").read_text())["artifacts"][0]["qat"]
    assert record["accuracy"]["qat"] is not None  # mean IoU of the QAT file on the held-out masks
    assert list(record["scored_by"].values()) == ["segmentation: miou"]

    reg = task_models / "regression"
    proc = edgetool_in_process(
        "convert",
        reg / "model",
        "--quant",
        "auto",
        "--max-drop",
        "0.05",
        "--eval-data",
        reg / "eval.npz",
        "--calibration",
        reg / "eval.npz",
        "-o",
        tmp_path / "auto",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # was: "labels range 25..346 … must be class indices"
    decision = json.loads((tmp_path / "auto" / "decision.json").read_text())
    assert (decision["task"], decision["metric"]) == ("regression", "r2")
    data = np.load(reg / "eval.npz")
    ref = _reference(reg / "model", data["x"])["value"][:, 0]
    assert decision["reference_accuracy"] == pytest.approx(sklearn_metrics.r2_score(data["y"], ref), rel=1e-6)
    for c in decision["candidates"]:  # (int16x8: eval's batched run and this one differ in the 7th digit)
        pred = _litert(tmp_path / "auto" / ("candidates/" if not c["chosen"] else "") / c["file"], data["x"])
        assert c["accuracy"] == pytest.approx(sklearn_metrics.r2_score(data["y"], pred["value"][:, 0]), rel=1e-5)
