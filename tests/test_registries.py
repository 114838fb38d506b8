"""Every plug-in table (modes, formats, format readers, runtimes, check targets, tasks) is one ``Registry``: a name
registered twice fails at import instead of silently replacing the first entry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# importing the plug-in packages fills the tables
import edge_tool.check.targets
import edge_tool.convert.formats
import edge_tool.convert.modes
import edge_tool.evaluate.runtimes
import edge_tool.models.formats  # noqa: F401
from edge_tool.check.registry import TARGETS
from edge_tool.convert.formats.registry import FORMATS
from edge_tool.convert.registry import MODES
from edge_tool.core.registry import Registry
from edge_tool.evaluate.runtimes.registry import SPECS
from edge_tool.models.formats.registry import READERS
from edge_tool.tasks.registry import TASKS

PACKAGE = Path(__file__).resolve().parents[1] / "edge_tool"
TABLES = {"modes": MODES, "formats": FORMATS, "readers": READERS, "runtimes": SPECS, "targets": TARGETS, "tasks": TASKS}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_table_is_a_filled_registry_that_refuses_a_second_entry_of_a_name(name):
    table = TABLES[name]
    assert isinstance(table, Registry) and len(table) >= 3
    key, entry = next(iter(table.items()))
    with pytest.raises(ValueError, match="registered twice"):
        table.add(key, entry)
    assert table[key] is entry  # the refused add changed nothing


def test_every_register_function_fills_a_registry():
    """A module that defines ``register`` keeps its table as a module-level ``Registry(...)``, not a bare dict."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body):
            continue
        tables = [
            n
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", None) == "Registry"
        ]
        assert tables, f"{path.relative_to(PACKAGE.parent)} defines register() without a Registry table"
