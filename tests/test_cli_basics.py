"""The CLI shell: help is instant (no TensorFlow import), version, option validation."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.commands.registry import COMMANDS
from edge_tool.convert.enums import IOType, Objective, QatStrategy, TfjsQuant
from edge_tool.convert.formats import OutputFormat

runner = CliRunner()


def test_help_does_not_import_tensorflow():
    code = (
        "import sys; from edge_tool.cli import app; print('tensorflow' in sys.modules, 'tensorflowjs' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_help_lists_every_registered_command_and_each_has_help():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    listed = {line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and len(line.split()) > 1}
    assert {name for name, _ in COMMANDS} <= listed, result.output
    for name, _ in COMMANDS:
        sub = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
        assert sub.exit_code == 0 and f"Usage: edgetool {name}" in sub.output, (name, sub.output)


def test_module_entry_point_version():
    proc = subprocess.run([sys.executable, "-m", "edge_tool", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.startswith("edgetool ")


def test_bad_option_value_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "m"
    result = runner.invoke(app, ["train", "-o", str(out), "--epochs", "0"])
    assert result.exit_code == 2
    assert "--epochs must be >= 1, got 0" in result.output
    assert not out.exists()


def test_enum_options_offer_their_registry_choices(tmp_path):
    """--format/--io-type/--tfjs-quant/--strategy/--objective are Typer enums: a bad value exits 2 listing every choice."""
    for option, enum in (
        ("--format", OutputFormat),
        ("--io-type", IOType),
        ("--tfjs-quant", TfjsQuant),
        ("--strategy", QatStrategy),
        ("--objective", Objective),
    ):
        result = runner.invoke(
            app, ["convert", str(tmp_path), "-o", str(tmp_path / "out"), option, "bogus"], env={"COLUMNS": "200"}
        )
        assert result.exit_code == 2, (option, result.output)
        assert all(f"'{e.value}'" in result.output for e in enum), (option, result.output)
    assert not (tmp_path / "out").exists()
