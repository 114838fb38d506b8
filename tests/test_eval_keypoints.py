"""eval of a keypoint model whose labels are coordinates (issue 42 item 3): tests/task_models.py's keypoints model,
trained on Gaussian maps drawn from (x, y) labels, converted to fp32 + int8 by edgetool; eval infers the task from
the (n, K, 2) labels and its PCK and pixel errors are recomputed here with numpy from LiteRT's own outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from edge_tool.schemas import check
from tests.edgetool_runs import REPO, edgetool_in_process

pytestmark = pytest.mark.slow  # trains a model (seconds)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("keypoints")
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "task_models.py"), str(root), "keypoints"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = root / "keypoints"
    proc = edgetool_in_process(
        "convert", d / "model", "--quant", "fp32,int8", "--calibration", d / "calib.npz", "-o", d / "out"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return d


def _eval(d, data, *extra):
    out = d / f"eval_{len(list(d.glob('eval_*.json')))}.json"
    files = [d / "out" / f"model_{m}.tflite" for m in ("fp32", "int8")]
    proc = edgetool_in_process("eval", *files, "-r", d / "model", "-d", data, "--runs", "2", "--warmup", "1",
                               "--json", out, *extra)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    check(doc, "eval", "the eval report")
    return doc, {r["artifact"]: r for r in doc["results"]}


def _litert(path, x) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner()
    (name,) = runner.get_input_details()
    return np.concatenate([next(iter(runner(**{name: x[i : i + 1]}).values())) for i in range(len(x))])


def _decoded(maps: np.ndarray, soft: bool) -> np.ndarray:
    """(n, K, 2) input (x, y) per map, one map at a time: arg-max pixel, or the non-negative-weighted mean
    position of the 5x5 window around it; heatmap pixel centres scaled onto the 32x32 input's."""
    n, h, w, k = maps.shape
    got = np.zeros((n, k, 2))
    for i in range(n):
        for j in range(k):
            m = maps[i, :, :, j].astype(np.float64)
            r, c = np.unravel_index(np.argmax(m), m.shape)
            if soft:
                r0, c0 = max(r - 2, 0), max(c - 2, 0)
                win = np.clip(m[r0 : r + 3, c0 : c + 3], 0, None)
                rows, cols = np.mgrid[r0 : r0 + win.shape[0], c0 : c0 + win.shape[1]]
                r, c = (rows * win).sum() / win.sum(), (cols * win).sum() / win.sum()
            got[i, j] = ((c + 0.5) * 32 / w - 0.5, (r + 0.5) * 32 / h - 0.5)
    return got


def test_coordinate_labels_are_scored_as_keypoints_on_both_files(built):
    d = built
    data = np.load(d / "eval.npz")
    doc, rows = _eval(d, d / "eval.npz")
    assert doc["task"]["name"] == "keypoints" and not doc["task"]["assumed"]
    assert doc["settings"]["keypoint_order"] == "xy"
    for mode in ("fp32", "int8"):
        m = rows[f"model_{mode}.tflite"]["metrics"]
        maps = _litert(d / "out" / f"model_{mode}.tflite", data["x"])
        dist = np.linalg.norm(_decoded(maps, soft=False) - data["y"], axis=-1)
        soft = np.linalg.norm(_decoded(maps, soft=True) - data["y"], axis=-1)
        for alpha in (0.05, 0.1, 0.2):  # of the input's longer side, 32 px
            assert m[f"pck@{alpha:g}"] == pytest.approx(np.mean(dist <= alpha * 32), abs=1e-12)
        assert m["keypoint_error"] == pytest.approx(dist.mean(), rel=1e-9)
        assert m["keypoint_error_soft"] == pytest.approx(soft.mean(), rel=1e-9)
        assert m["pck@0.1_soft"] == pytest.approx(np.mean(soft <= 3.2), abs=1e-12)
        assert m["pck@0.1"] > 0.8 and m["keypoint_error"] < 3  # it learned: the check above is not of noise
        assert m["keypoint_error_soft"] < m["keypoint_error"]  # sub-pixel decoding helps at stride 2


def test_row_column_labels_with_keypoint_order_yx_give_the_same_figures(built, tmp_path):
    d = built
    data = np.load(d / "eval.npz")
    np.savez(tmp_path / "yx.npz", x=data["x"], y=data["y"][..., ::-1])
    _, xy_rows = _eval(d, d / "eval.npz")
    _, yx_rows = _eval(d, tmp_path / "yx.npz", "--keypoint-order", "yx")
    for name, row in xy_rows.items():
        assert yx_rows[name]["metrics"] == pytest.approx(row["metrics"], rel=1e-12)
