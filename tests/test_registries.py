"""Every plug-in table (modes, formats, format readers, runtimes, check targets, tasks) is one ``Registry`` filled
the one way: each plug-in module builds its frozen spec and calls ``TABLE.register(spec)`` (keyed by ``spec.name``);
a name registered twice fails at import instead of silently replacing the first entry, and every name list and
CLI Enum is derived from the table, in registration order."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

# importing the plug-in packages fills the tables
import edge_tool.convert.formats
import edge_tool.models.readers  # noqa: F401
from edge_tool.auto.config import REQUIREMENTS, Requirement
from edge_tool.calibration.readers import BY_SUFFIX
from edge_tool.calibration.readers import READERS as DATA_READERS
from edge_tool.check.targets import TARGET_NAMES, TARGETS
from edge_tool.convert.formats.registry import FORMATS
from edge_tool.convert.modes import MODES, QuantMode, every_mode, named_modes
from edge_tool.core.registry import Registry
from edge_tool.evaluate.runtimes import HOST, RUNTIME_CHOICES, RUNTIMES, RuntimeChoice
from edge_tool.models.readers.registry import READERS
from edge_tool.tasks import TASK_NAMES, TASKS, TaskName

PACKAGE = Path(__file__).resolve().parents[1] / "edge_tool"
TABLES = {
    "modes": MODES,
    "formats": FORMATS,
    "readers": READERS,
    "runtimes": RUNTIMES,
    "targets": TARGETS,
    "tasks": TASKS,
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_table_is_a_filled_registry_keyed_by_its_specs_names_that_refuses_a_second_entry(name):
    table = TABLES[name]
    assert isinstance(table, Registry) and len(table) >= 3
    assert all(key == spec.name for key, spec in table.items()), name
    key, entry = next(iter(table.items()))
    with pytest.raises(ValueError, match="registered twice"):
        table.register(entry)
    assert not hasattr(table, "add")  # one door: the old two-argument add is gone
    assert table[key] is entry  # the refused register changed nothing


@pytest.mark.parametrize("name", sorted(set(TABLES) - {"tasks"}))
def test_each_spec_is_frozen(name):
    spec = next(iter(TABLES[name].values()))
    assert dataclasses.is_dataclass(spec) and type(spec).__dataclass_params__.frozen, name


def _calls(tree: ast.AST, attr: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == attr]


def test_every_table_is_filled_through_register_spec_only():
    """No module defines its own ``register`` (a decorator with ``**caps``, a per-table signature); each plug-in
    calls ``TABLE.register(spec)`` with one argument; none uses the old ``add(name, entry)``."""
    own_register, odd_calls, adds = [], [], []
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text())
        if where != "core/registry.py" and any(
            isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body
        ):
            own_register.append(where)
        for call in _calls(tree, "register"):
            table = getattr(call.func.value, "id", "")
            if table.isupper() and (len(call.args) != 1 or call.keywords):
                odd_calls.append(f"{where}:{call.lineno}")
        adds += [where for c in _calls(tree, "add") if getattr(c.func.value, "id", "").isupper() and len(c.args) == 2]
    assert own_register == []
    assert odd_calls == []
    assert adds == []


def test_every_register_call_fills_a_registry():
    """A module-level ``X.register(...)`` names a table that is a ``Registry``, not a bare dict."""
    tables = {id(t) for t in TABLES.values()}
    assert len(tables) == len(TABLES)
    for name, table in TABLES.items():
        assert type(table) is Registry, name


def test_name_lists_and_enums_are_the_registrys_names():
    assert TARGET_NAMES == TARGETS.names() == ("litert-cpu", "gpu", "tflm", "tfjs", "litertjs", "edgetpu")
    assert TASK_NAMES == TASKS.names() == tuple(t.value for t in TaskName)
    assert TASK_NAMES[:4] == ("classification", "multilabel", "regression", "segmentation")  # the order --help shows
    assert tuple(m.value for m in QuantMode) == MODES.names() == named_modes()
    assert every_mode(has_train_data=True) == tuple(n for n, s in MODES.items() if s.in_all)
    assert tuple(r.value for r in RuntimeChoice) == RUNTIME_CHOICES and set(RUNTIME_CHOICES) <= set(HOST)
    assert tuple(r.value for r in Requirement) == tuple(REQUIREMENTS)


def test_device_targets_and_reader_suffixes_are_views_of_their_specs():
    assert [n for n, s in TARGETS.items() if s.on_device] == ["litert-cpu", "tflm"]
    assert BY_SUFFIX == {s: cls for cls in DATA_READERS for s in cls.suffixes}
    assert {".npz", ".npy", ".csv", ".tfrecord"} <= set(BY_SUFFIX)
