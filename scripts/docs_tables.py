"""Regenerate everything written from the registries: the mode and format tables (README.md, docs/convert.md) and
the runtime table (README.md, docs/eval.md), each between its ``<!-- NAME-table:start/end -->`` markers, and the
published schemas' enums of registered names (artefact formats, tasks).

Usage: python scripts/docs_tables.py [--check]   (--check: exit 1 when a file's table differs, write nothing)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_tool.convert.formats import FORMATS, format_table  # noqa: E402
from edge_tool.convert.modes import mode_table  # noqa: E402
from edge_tool.core.doc_tables import splice  # noqa: E402
from edge_tool.evaluate.runtimes import runtime_table  # noqa: E402
from edge_tool.models.readers import ArtifactFormat  # noqa: E402
from edge_tool.tasks import TASK_NAMES  # noqa: E402

CONVERT_DOCS = ("README.md", "docs/convert.md")
# table name (its markers) -> (the registry's table, the files that hold it)
TABLES = {
    "modes": (mode_table, CONVERT_DOCS),
    "formats": (format_table, CONVERT_DOCS),
    "runtimes": (runtime_table, ("README.md", "docs/eval.md")),
}
# schema file -> {the JSON path of an {"enum": [...]} property: the registered names it lists}
SCHEMA_ENUMS = {
    "edge_tool/schemas/manifest.schema.json": {
        ("$defs", "artifact", "properties", "format"): lambda: [n for n, s in FORMATS.items() if s.extends is None]
    },
    "edge_tool/schemas/eval.schema.json": {
        ("$defs", "result", "properties", "format"): lambda: [f.value for f in ArtifactFormat],
        ("properties", "task", "properties", "name"): lambda: list(TASK_NAMES),
    },
    "edge_tool/schemas/decision.schema.json": {("properties", "task"): lambda: list(TASK_NAMES)},
}
FILES = tuple(dict.fromkeys([*(f for _, files in TABLES.values() for f in files), *SCHEMA_ENUMS]))


def regenerated(name: str, text: str) -> str:
    """``text`` (the file ``name`` of FILES) with every table and schema enum it holds replaced by the registry's."""
    for table, (make, files) in TABLES.items():
        if name in files:
            text = splice(text, table, make())
    for path, names in SCHEMA_ENUMS.get(name, {}).items():
        text = _with_enum(text, path, names())
    return text


def _with_enum(text: str, path: tuple[str, ...], names: list[str]) -> str:
    """The schema ``text`` with the enum at ``path`` listing ``names``, its hand-made layout kept: the one line
    ``"KEY": {"enum": [...]`` is rewritten, then the JSON is read back to prove it was the one at ``path``."""
    pattern = re.compile(r'("' + re.escape(path[-1]) + r'": \{"enum": )\[[^\]]*\]')
    if len(pattern.findall(text)) != 1:
        raise ValueError(
            f'expected one "{path[-1]}": {{"enum": [...]}} in the schema, found {len(pattern.findall(text))}'
        )
    text = pattern.sub(lambda m: m.group(1) + json.dumps(names), text)
    node = json.loads(text)
    for key in path:
        node = node[key]
    if node["enum"] != names:
        raise ValueError(f"the enum rewritten is not the one at {'/'.join(path)}")
    return text


def main(argv: list[str]) -> int:
    """Write (or with --check, compare) the generated tables in every file of FILES."""
    stale = []
    for name in FILES:
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        wanted = regenerated(name, text)
        if wanted != text:
            stale.append(name)
            if "--check" not in argv:
                path.write_text(wanted, encoding="utf-8")
    verb = "differ" if "--check" in argv else "updated"
    print(f"generated tables {verb}: {', '.join(stale)}" if stale else "generated tables up to date")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
