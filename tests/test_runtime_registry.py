"""The eval runtimes are a registry: the --runtime choices, the default runtime of each artefact format and
the report's runtime-only fields derive from it (the docs' runtime table and the eval schema's format enum:
tests/test_docs_tables.py)."""

from __future__ import annotations

import dataclasses

from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.evaluate.config import ArtifactFormat
from edge_tool.evaluate.rows import ArtifactResult
from edge_tool.evaluate.runtimes import HOST, RUNTIMES, SPECS, runtime_for


def test_runtime_choices_are_the_runtimes_that_share_a_format():
    """--runtime picks between host runtimes of one format (LiteRT or TFLM for .tflite), the default first."""
    assert RUNTIMES == ("litert", "tflm")
    assert set(SPECS) == {"litert", "tflm", "tfjs", "onnxruntime"}
    # a --device board is a place, not a runtime: the .tflite runtimes run there through the same specs
    assert {n for n, s in SPECS.items() if s.on_board} == {"litert", "tflm"}
    help_text = " ".join(CliRunner().invoke(app, ["eval", "--help"], terminal_width=200).output.split())
    for name in RUNTIMES:
        assert name in help_text


def test_every_format_has_one_default_runtime():
    for fmt in ArtifactFormat:
        defaults = [s.name for s in HOST.values() if s.default and fmt.value in s.formats]
        assert len(defaults) == 1, (fmt, defaults)
        assert runtime_for(fmt, "litert").name == defaults[0]
    assert runtime_for(ArtifactFormat.TFLITE, "tflm").name == "tflm"
    assert runtime_for(ArtifactFormat.ONNX, "tflm").name == "onnxruntime"  # --runtime picks within a format
    assert all(f in {x.value for x in ArtifactFormat} for s in SPECS.values() for f in s.formats)


def test_runtime_only_fields_belong_to_one_runtime_each():
    """Each runtime-only ArtifactResult field is declared by exactly one runtime and defaults to None (absent from
    every other runtime's rows and their JSON)."""
    declared = [f for s in SPECS.values() for f in s.result_fields]
    assert len(declared) == len(set(declared))
    defaults = {f.name: f.default for f in dataclasses.fields(ArtifactResult)}
    for name in declared:
        assert name in defaults and defaults[name] is None, name


def test_unknown_runtime_refused(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(tmp_path / "m.tflite"),
            "-r",
            str(tmp_path),
            "-d",
            str(tmp_path / "d.npz"),
            "--runtime",
            "tensorrt",
        ],
    )
    assert result.exit_code == 2
    assert "--runtime expects one of litert, tflm, got 'tensorrt'" in result.output
