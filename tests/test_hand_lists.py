"""Lists are derived from the registries, never kept by hand beside them (issue 41): no literal tuple, list or set of
two or more names of one plug-in table, no Enum whose members are such names, and no help text listing three or
more of them, in edgetool's own code. A spec's own fields (a literal handed to the spec it describes, e.g. a
format's ``modes=``) are facts, not lists; the few exemptions below say why."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import edge_tool.convert.formats
import edge_tool.models.readers  # noqa: F401
from edge_tool.check.targets import TARGETS
from edge_tool.commands import convert as convert_command
from edge_tool.commands.format_option_types import format_option_help
from edge_tool.convert.formats import option_owners
from edge_tool.convert.formats.registry import FORMATS
from edge_tool.convert.modes import MODES
from edge_tool.evaluate.runtimes import RUNTIMES
from edge_tool.tasks import TASKS

REPO = Path(__file__).resolve().parents[1]
TABLES = {
    "modes": set(MODES.names()),
    "formats": set(FORMATS.names()),
    "tasks": set(TASKS.names()),
    "runtimes": set(RUNTIMES.names()),
    "check targets": set(TARGETS.names()),
    "main metrics": {task.main_metric for task in TASKS.values()},
}
EXEMPT = {  # "path:line": why
    "edge_tool/demo/litert_site.py:82": "the two builds a --litert page ships (its own choice, not a view of MODES)",
    "edge_tool/litert/flatbuffer_facts.py:95": "read from a file's tensors, below convert's floor (no mode table)",
}


def _table_of(names: list[str]) -> str | None:
    """The table all of ``names`` (two or more, distinct) belong to, if any."""
    if len(set(names)) < 2:
        return None
    return next((table for table, known in TABLES.items() if set(names) <= known), None)


def _strings(node: ast.AST) -> list[str] | None:
    elts = getattr(node, "elts", None)
    if elts is None or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
        return None
    return [e.value for e in elts]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of docstrings (prose, not lists), but those of the ``command`` functions: they are ``--help``."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and getattr(node, "name", "") != "command":
            found.add(id(body[0].value))
    return found


def _spec_fields(tree: ast.AST) -> set[int]:
    """ids of literals handed to a call as a keyword (a spec's own field: ``FormatSpec(..., modes=(...))``)."""
    return {id(kw.value) for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords}


def hand_lists(path: Path) -> list[str]:
    """``path:line table: names`` for every hand-kept list of registered names in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fields, prose, rel, found = _spec_fields(tree), _docstrings(tree), path.relative_to(REPO), []
    for node in ast.walk(tree):
        names = None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in fields:
            names = _strings(node)
        elif isinstance(node, ast.ClassDef) and any(
            getattr(b, "id", getattr(b, "attr", "")) == "Enum" for b in node.bases
        ):
            values = [
                s.value.value for s in node.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
            ]
            names = [v for v in values if isinstance(v, str)] if len(values) >= 2 else None
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            for run in re.findall(r"[\w-]+(?:, [\w-]+(?: in dB)?){2,}", node.value):
                words = [w.removesuffix(" in dB") for w in run.split(", ")]
                if _table_of(words) and len(words) >= 3:
                    found.append(f"{rel}:{node.lineno} {_table_of(words)}: {run}")
            continue
        table = _table_of(names or [])
        if table and f"{rel}:{node.lineno}" not in EXEMPT:
            found.append(f"{rel}:{node.lineno} {table}: {', '.join(names)}")
    return found


def test_no_list_a_registry_could_derive_is_kept_by_hand():
    files = sorted(p for p in (REPO / "edge_tool").rglob("*.py") if "web_demo" not in p.parts)
    found = [row for f in files for row in hand_lists(f)]
    assert found == [], "derive these from the registry (a fact on each spec, then a comprehension):\n" + "\n".join(
        found
    )


def test_every_format_option_is_a_convert_option_derived_from_its_record():
    """A field of a format's options record is a parameter of ``convert`` typed ``format_option(name)``."""
    hints = typing.get_type_hints(convert_command.command, include_extras=True)
    for name, (_, row) in option_owners().items():
        assert name in hints, f"convert has no {row.flag}: add `{name}: format_option({name!r}) = None`"
        option = typing.get_args(hints[name])[1]
        assert (option.default, *option.param_decls) == (row.flag,) and option.help == format_option_help(name)


def test_the_scan_finds_each_kind_of_hand_list():
    f = REPO / "edge_tool" / "_probe_hand_lists.py"
    f.write_text(
        "from enum import Enum\n"
        "PICK = ('int8', 'qat')\n"
        "class Mode(str, Enum):\n    A = 'fp32'\n    B = 'fp16'\n"
        "HELP = 'the metric (accuracy, f1_macro, r2) drops'\n"
        "def f():\n    'Builds fp32, fp16, dynamic.'\n"  # a docstring: prose
        "SPEC = dict(modes=('int8', 'qat'))\n"  # a spec's own field: a fact
    )
    try:
        rows = hand_lists(f)
    finally:
        f.unlink()
    assert sorted(row.split(" ", 1)[1] for row in rows) == [
        "main metrics: accuracy, f1_macro, r2",
        "modes: fp32, fp16",
        "modes: int8, qat",
    ]
