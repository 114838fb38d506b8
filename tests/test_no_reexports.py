"""A name is imported from the module that defines it (issue 33): a module does not pass on another edge_tool
module's names (by listing them in ``__all__``, or importing them with ``noqa: F401``) so that they stay "importable
from here, as before". A package's ``__init__`` may name its public API; the exemptions below are the whole list.
Code written against a re-export that went is rewritten by scripts/rewrite_moved_imports.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("edge_tool", "calibration")  # calibration/ is edge_tool.calibration: the rule reads it too (issue 41)
NOT_OURS = {"web_demo", "__pycache__"}
EXEMPT = {
    # the one error family: calibration's root classes (which it needs without edge_tool) and edgetool's own
    "edge_tool/errors.py": "the error family's face over calibration.errors",
    # TensorFlow's process settings, shared with calibration's TFRecord reader, which imports nothing of edge_tool
    "edge_tool/core/env.py": "the face of calibration.tfenv",
    # its enums are being moved with ConvertConfig's rework (issue 33 part 1, the formats' options)
    "edge_tool/convert/config.py": "ConvertConfig's enums, until the config rework moves their importers",
}


def _ours(node: ast.ImportFrom) -> bool:
    return bool(node.level) or (node.module or "").split(".")[0] == "edge_tool"


def _is_module(node: ast.ImportFrom, name: str, path: Path) -> bool:
    """True when ``from X import name`` names a module (imported for what it registers, not passed on)."""
    here = path.relative_to(REPO).parent.parts if node.level else ()
    base = here[: len(here) - node.level + 1]
    target = REPO.joinpath(*base, *(node.module or "").split("."), name) if node.module else REPO.joinpath(*base, name)
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def reexports(path: Path) -> list[str]:
    """Names ``path`` imports at module level from an edge_tool module and passes on (``__all__``, noqa F401)."""
    text = path.read_text(encoding="utf-8")
    tree, lines = ast.parse(text), text.splitlines()
    imported: dict[str, ast.ImportFrom] = {}
    listed: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and _ours(node):
            imported |= {alias.asname or alias.name: node for alias in node.names}
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            listed |= {e.value for e in getattr(node.value, "elts", ()) if isinstance(e, ast.Constant)}
    marked = {
        name
        for name, node in imported.items()
        if "F401" in " ".join(lines[node.lineno - 1 : node.end_lineno]) and not _is_module(node, name, path)
    }
    return sorted((listed & imported.keys()) | marked)


def _modules() -> list[Path]:
    files = [f for package in PACKAGES for f in (REPO / package).rglob("*.py")]
    return [f for f in files if f.name != "__init__.py" and not NOT_OURS & set(f.relative_to(REPO).parts)]


def test_no_module_passes_on_another_modules_names():
    found = {str(f.relative_to(REPO)): names for f in _modules() if (names := reexports(f))}
    assert {k: v for k, v in found.items() if k not in EXEMPT} == {}, "import these from their defining modules"


def test_every_exemption_is_still_needed():
    stale = [name for name in EXEMPT if not (REPO / name).is_file() or not reexports(REPO / name)]
    assert not stale, f"exemptions no longer needed (remove them from EXEMPT): {stale}"


def test_the_check_sees_both_ways_of_passing_a_name_on(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "from edge_tool.errors import UsageError, DataError\n"
        "from edge_tool.core.fsutil import (  # noqa: F401 (importable here)\n    atomic_dir,\n)\n"
        "from .sibling import helper\n"
        "from edge_tool import tasks  # noqa: F401 (every task registers itself)\n"
        "from json import dumps\n"
        "__all__ = ['UsageError', 'helper', 'dumps', 'own']\n"
        "def own():\n    return DataError\n"
    )
    assert reexports(f) == ["UsageError", "atomic_dir", "helper"]
