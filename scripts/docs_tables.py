"""Regenerate every registry-generated table in the docs: the mode and format tables (README.md, docs/convert.md)
and the runtime table (README.md, docs/eval.md), each between its ``<!-- NAME-table:start/end -->`` markers.

Usage: python scripts/docs_tables.py [--check]   (--check: exit 1 when a file's table differs, write nothing)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_tool.convert.formats import format_table  # noqa: E402
from edge_tool.convert.modes import mode_table  # noqa: E402
from edge_tool.core.doc_tables import splice  # noqa: E402
from edge_tool.evaluate.runtimes import runtime_table  # noqa: E402

CONVERT_DOCS = ("README.md", "docs/convert.md")
# table name (its markers) -> (the registry's table, the files that hold it)
TABLES = {
    "modes": (mode_table, CONVERT_DOCS),
    "formats": (format_table, CONVERT_DOCS),
    "runtimes": (runtime_table, ("README.md", "docs/eval.md")),
}
FILES = tuple(dict.fromkeys(f for _, files in TABLES.values() for f in files))


def regenerated(name: str, text: str) -> str:
    """``text`` (the file ``name`` of FILES) with every table it holds replaced by the registry's."""
    for table, (make, files) in TABLES.items():
        if name in files:
            text = splice(text, table, make())
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
