"""Our own modules are imported at the top of the file (issue 33's architecture bar): an import of an edge_tool
module inside a function hides a dependency from the reader and from the floors test's first glance, so outside
the command layer (``commands/``, ``api.py`` and ``cli.py``, which stay light at import by importing their
implementation when run) at most LIMIT remain, each where a module-level import would form a circle or load a heavy
library (numpy, TensorFlow) into a light import path (tests/test_cli_basics.py, tests/test_convert_onnx.py).

Heavy libraries inside functions are ruff's rule (TID253/PLC0415, tests/test_lint.py); this counts what ruff's
``noqa: PLC0415`` lets through for our own modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 20
COMMAND_LAYER = ("commands", "api.py", "cli.py")  # first path part under edge_tool/
NOT_OURS = {"calibration", "web_demo", "__pycache__"}  # installed into edge_tool/, imports nothing of it


def _is_ours(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] == "edge_tool"
    return any(alias.name.split(".")[0] == "edge_tool" for alias in node.names)


def _local_imports_in(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Imports of our modules anywhere below a function (nested functions and methods included), each once."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                if in_function and _is_ours(child):
                    found.append(child)
            else:
                visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return found


def local_imports(package: Path = REPO / "edge_tool") -> list[str]:
    """``path:line module`` for every function-local import of an edge_tool module under ``package``, the command
    layer excepted."""
    rows = []
    for f in sorted(package.rglob("*.py")):
        rel = f.relative_to(package)
        if rel.parts[0] in COMMAND_LAYER or NOT_OURS & set(rel.parts):
            continue
        for node in _local_imports_in(ast.parse(f.read_text(encoding="utf-8"))):
            name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            dots = "." * node.level if isinstance(node, ast.ImportFrom) else ""
            rows.append(f"{package.name}/{rel}:{node.lineno} {dots}{name or ''}")
    return rows


def test_few_of_our_modules_are_imported_inside_functions():
    rows = local_imports() + local_imports(REPO / "calibration")  # calibration/ is edge_tool.calibration (issue 41)
    assert len(rows) <= LIMIT, (
        f"{len(rows)} function-local imports of edge_tool modules outside the command layer (at most {LIMIT}); "
        "move them to the top of the module, or say in the code why the top would form a circle or load a heavy "
        "library:\n" + "\n".join(rows)
    )


def test_the_count_sees_local_imports_and_only_those(tmp_path):
    pkg = tmp_path / "edge_tool"
    (pkg / "commands").mkdir(parents=True)
    (pkg / "calibration").mkdir()
    (pkg / "m.py").write_text(
        "from edge_tool.errors import UsageError\n"  # module level: not counted
        "def f():\n"
        "    import json\n"  # the standard library: not ours
        "    from edge_tool.core.env import import_tf\n"
        "    def g():\n"
        "        from . import sibling\n"  # relative, in a nested function: counted once
        "    return json, import_tf, g\n"
        "class C:\n"
        "    def method(self):\n"
        "        import edge_tool.errors\n"
    )
    for name in ("commands/run.py", "api.py", "cli.py", "calibration/x.py"):  # the command layer; not edge_tool's
        (pkg / name).write_text("def f():\n    from edge_tool.errors import UsageError\n")
    assert local_imports(pkg) == [
        "edge_tool/m.py:4 edge_tool.core.env",
        "edge_tool/m.py:6 .",
        "edge_tool/m.py:10 edge_tool.errors",
    ]
