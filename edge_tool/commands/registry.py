"""The one place commands are registered: (name, the module defining its ``command``) in the order ``--help`` lists
them.

A command's module is imported only when that command runs or shows its own help (``cli.Commands``): its options
take their choices from the plug-in registries (runtimes, tasks, check targets, modes), whose modules import
NumPy, so ``edgetool --help`` lists the commands from their docstrings alone (``summary``) and stays instant.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path

COMMANDS = (
    ("train", "edge_tool.commands.train"),
    ("inspect", "edge_tool.commands.inspect_cmd"),
    ("convert", "edge_tool.commands.convert"),
    ("eval", "edge_tool.commands.eval_cmd"),
    ("check", "edge_tool.commands.check"),
    ("device", "edge_tool.commands.device_cmd"),
    ("demo", "edge_tool.commands.demo"),
    ("serve", "edge_tool.commands.serve"),
)


def load(module: str) -> Callable:
    """The ``command`` function of ``module`` (importing it)."""
    return importlib.import_module(module).command


def summary(module: str) -> str:
    """The docstring of ``module``'s ``command``, read from its source without importing it (imported after all
    when only compiled files are installed); "" when it has none."""
    origin = Path(importlib.util.find_spec(module).origin)
    if origin.suffix != ".py":
        return inspect.getdoc(load(module)) or ""
    tree = ast.parse(origin.read_text(encoding="utf-8"))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "command")
    return ast.get_docstring(func) or ""
