"""Where a model's labels.txt is looked for: inside a model directory, or beside a model file; never in the parent
of a directory model (``models/labels.txt`` beside ``models/a/`` and ``models/b/`` belongs to neither). A labels
file found by looking that does not fit the model is a note, never a stop; --labels that does not fit is exit 2."""

from __future__ import annotations

import shutil

from edge_tool.models.labelmap import labels_file_for
from tests.edgetool_runs import edgetool_in_process


def _layout(flat_model, tmp_path):
    """models/a, models/b (copies of the 3-class flat model without their own labels) and models/labels.txt (10)."""
    models = tmp_path / "models"
    for name in ("a", "b"):
        shutil.copytree(flat_model, models / name)
        (models / name / "labels.txt").unlink()
    (models / "labels.txt").write_text("".join(f"class{i}\n" for i in range(10)))
    return models


def test_parent_folder_labels_belong_to_no_directory_model(flat_model, tmp_path):
    models = _layout(flat_model, tmp_path)
    assert labels_file_for(models / "b") is None
    (models / "b" / "labels.txt").write_text("x\ny\nz\n")
    assert labels_file_for(models / "b") == models / "b" / "labels.txt"
    (models / "m.keras").write_bytes(b"")
    assert labels_file_for(models / "m.keras") == models / "labels.txt"  # beside a model file: its labels


def test_convert_and_eval_ignore_parent_labels(flat_model, tmp_path):
    models = _layout(flat_model, tmp_path)
    proc = edgetool_in_process("convert", models / "b", "--quant", "fp32", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # was exit 2: "has 10 labels, but no output ..."
    assert "labels: none" in proc.stdout + proc.stderr
    proc = edgetool_in_process(
        "eval", next((tmp_path / "out").glob("*.tflite")), "-r", models / "b", "-d", models / "b" / "eval.npz",
        "--runs", "2", "--warmup", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_unfit_labels_beside_a_model_are_a_note_and_given_ones_a_stop(flat_model, tmp_path):
    models = _layout(flat_model, tmp_path)
    (models / "b" / "labels.txt").write_text("".join(f"c{i}\n" for i in range(5)))  # inside, but 5 for 3 classes
    proc = edgetool_in_process("convert", models / "b", "--quant", "fp32", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = " ".join((proc.stdout + proc.stderr).split())
    assert "has 5 labels" in flat and "ignored" in flat and "--labels" in flat
    proc = edgetool_in_process(
        "convert", models / "b", "--quant", "fp32", "--labels", models / "labels.txt", "-o", tmp_path / "out2"
    )
    assert proc.returncode == 2 and "has 10 labels" in " ".join((proc.stdout + proc.stderr).split())
    assert not (tmp_path / "out2").exists()
