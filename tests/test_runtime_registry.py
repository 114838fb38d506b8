"""The eval runtimes are a registry: the --runtime choices, the default runtime of each artefact format and
the report's runtime-only fields derive from it (the docs' runtime table and the eval schema's format enum:
tests/test_docs_tables.py)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.evaluate.rows import ArtifactResult
from edge_tool.evaluate.runtimes import HOST, RUNTIME_CHOICES, RUNTIMES, RuntimeChoice, runtime_for
from edge_tool.models.readers import ArtifactFormat

REPO = Path(__file__).resolve().parents[1]


def test_runtime_choices_are_the_runtimes_that_share_a_format():
    """--runtime picks between host runtimes of one format (LiteRT or TFLM for .tflite), the default first."""
    assert RUNTIME_CHOICES == ("litert", "tflm") == tuple(r.value for r in RuntimeChoice)
    assert set(RUNTIMES) == {"litert", "tflm", "tfjs", "onnxruntime"}
    # a --device board is a place, not a runtime: the .tflite runtimes run there through the same specs
    assert {n for n, s in RUNTIMES.items() if s.on_board} == {"litert", "tflm"}
    help_text = " ".join(CliRunner().invoke(app, ["eval", "--help"], terminal_width=200).output.split())
    for name in RUNTIME_CHOICES:
        assert name in help_text


def test_every_format_has_one_default_runtime():
    for fmt in ArtifactFormat:
        defaults = [s.name for s in HOST.values() if s.default and fmt.value in s.formats]
        assert len(defaults) == 1, (fmt, defaults)
        assert runtime_for(fmt, "litert").name == defaults[0]
    assert runtime_for(ArtifactFormat.TFLITE, "tflm").name == "tflm"
    assert runtime_for(ArtifactFormat.ONNX, "tflm").name == "onnxruntime"  # --runtime picks within a format
    assert all(f in {x.value for x in ArtifactFormat} for s in RUNTIMES.values() for f in s.formats)


def test_runtime_only_fields_belong_to_one_runtime_each():
    """Each runtime-only ArtifactResult field is declared by exactly one runtime and defaults to None (absent from
    every other runtime's rows and their JSON)."""
    declared = [f for s in RUNTIMES.values() for f in s.result_fields]
    assert len(declared) == len(set(declared))
    defaults = {f.name: f.default for f in dataclasses.fields(ArtifactResult)}
    for name in declared:
        assert name in defaults and defaults[name] is None, name


def test_unknown_runtime_refused_before_the_keras_reference_is_exported(keras3_file, tmp_path):
    """A bad --runtime is Typer's refusal (exit 2, one line naming the choices) before the command runs: the .keras
    reference is not exported, so TensorFlow is never imported (a fresh process's import log shows it)."""
    args = ["eval", tmp_path / "m.tflite", "-r", keras3_file, "-d", tmp_path / "d.npz", "--runtime", "tensorrt"]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "edge_tool", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Invalid value for '--runtime': Value error, 'tensorrt' is not one of 'litert', 'tflm'." in proc.stderr
    imported = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}
    assert "edge_tool.evaluate.runtimes" in imported  # the choices came from the registry ...
    assert not {"tensorflow", "edge_tool.keras_files", "edge_tool.evaluate.pipeline"} & imported  # ... no work
    assert list(tmp_path.iterdir()) == []
