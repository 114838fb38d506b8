"""The CLI shell: help is instant (no TensorFlow import), version, option validation."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from edge_tool.auto.config import REQUIREMENTS
from edge_tool.check.targets import TARGET_NAMES, parse_targets
from edge_tool.cli import app
from edge_tool.commands.options import each_of
from edge_tool.commands.registry import COMMANDS, load, summary
from edge_tool.convert.enums import IOType, Objective, TfjsQuant
from edge_tool.convert.formats import OutputFormat
from edge_tool.convert.modes import MODES
from edge_tool.evaluate.runtimes import RUNTIME_CHOICES
from edge_tool.qat.enums import QatStrategy
from edge_tool.tasks import TASK_NAMES

REPO = Path(__file__).resolve().parents[1]

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


def test_root_help_imports_no_command_module():
    """``edgetool --help`` lists the commands from their docstrings: no command module (whose options import the
    plug-in registries, and NumPy with them) is imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "edge_tool", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0 and all(f" {name} " in proc.stdout for name, _ in COMMANDS), proc.stdout
    imported = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}
    assert "edge_tool.cli" in imported
    assert not {module for _, module in COMMANDS} & imported
    assert "numpy" not in imported


def test_registry_choices_are_refused_by_typer_before_any_work(tmp_path):
    """--runtime/--task (eval), --task (demo), --require and every item of --quant (convert), every item of --target
    (check): a value the registry does not hold exits 2 naming every registered choice; nothing is written."""
    out = tmp_path / "out"
    model, art, data = tmp_path / "m", tmp_path / "a.tflite", tmp_path / "d.npz"
    cases = (
        (["eval", art, "-r", model, "-d", data, "--runtime", "tensorrt"], RUNTIME_CHOICES),
        (["eval", art, "-r", model, "-d", data, "--task", "ranking"], TASK_NAMES),
        (["demo", model, "-o", out, "--task", "ranking"], TASK_NAMES),
        (["convert", model, "-o", out, "--quant", "auto", "--max-drop", "0.1", "--require", "fast"], REQUIREMENTS),
        (["convert", model, "-o", out, "--quant", "int8,int4"], (*MODES, "all", "auto")),
        (["convert", model, "-o", out, "-q", "int8", "--quant", "qat8"], (*MODES, "all", "auto")),
        (["check", model, "--target", "tflm,NPU"], (*TARGET_NAMES, "all")),
    )
    for args, names in cases:
        result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "300"})
        assert result.exit_code == 2, (args, result.output)
        message = " ".join(result.output.replace("│", " ").split())
        assert f"Invalid value for '{args[-2]}" in message, (args, message)
        assert all(name in message for name in names), (args, message)
    assert list(tmp_path.iterdir()) == []


def test_registry_choices_keep_their_spellings(tmp_path):
    """Comma lists, repeats and any case still parse as before (the values reach the config unchanged)."""
    assert each_of(TARGET_NAMES, "all")(["TFLM, litert-cpu", "all"]) == ["TFLM, litert-cpu", "all"]
    assert parse_targets(["TFLM, litert-cpu", "tflm"]) == ("tflm", "litert-cpu")
    assert parse_targets(["gpu,all"]) == TARGET_NAMES


def test_the_listed_help_of_each_command_is_its_docstring():
    """The root help's lines, read from each command module's source, are what the imported command says."""
    for _, module in COMMANDS:
        assert summary(module) == inspect.getdoc(load(module)), module


def test_a_refused_list_item_is_shown_escaped():
    """A bad --target item is user text: its control characters are shown as escapes, never sent to the terminal."""
    result = runner.invoke(app, ["check", "m.tflite", "--target", "tflm,\x1b[2Jgone"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "\x1b[2J" not in result.output
    assert "\\x1b[2Jgone" in result.output, result.output
