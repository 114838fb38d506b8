"""Regenerate the floors table of docs/architecture.md (between its ``<!-- floors-table:start/end -->`` markers) from
the floors test: ``FLOORS`` of tests/test_import_graph.py gives the floors and their packages, each package's
docstring (its ``__init__.py``, or the module's own) gives the first sentence shown, and the graph's module walk
gives the module and line counts. A package added to FLOORS gets its row on the next run; one without a docstring
is refused.

Usage: python scripts/architecture_doc.py [--check]   (--check: exit 1 when the table differs, write nothing)
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_tool.core.doc_tables import splice  # noqa: E402

DOC = "docs/architecture.md"
TABLE = "floors"
_spec = importlib.util.spec_from_file_location("_floors_test", REPO / "tests" / "test_import_graph.py")
floors_test = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floors_test)


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line, its ``code`` spans as Markdown's `code`."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(?=\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    return re.sub(r"``(.+?)``", r"`\1`", sentence).replace("|", "\\|")


def rounded_lines(n: int) -> str:
    """A line count to the hundred ("~1,600"; "< 100" below that): the table follows a package's size, not every
    edit."""
    return "< 100" if n < 100 else f"~{(n + 50) // 100 * 100:,}"


def _shown(package: str, path: Path) -> str:
    """``convert/`` for a package, ``cli`` for a module, ``edge_tool`` (``__init__``) for the top package."""
    name = package.removeprefix("edge_tool.") if package != "edge_tool" else "edge_tool"
    return f"`{name}/`" if path.name == "__init__.py" and package != "edge_tool" else f"`{name}`"


def floors_table(floors=None, modules: dict[str, Path] | None = None) -> str:
    """The Markdown table of ``floors`` (FLOORS by default), highest floor first, one row per package: its floor,
    name, module and line counts, and its docstring's first sentence. ValueError for a package with no module or
    no docstring."""
    floors = floors_test.FLOORS if floors is None else floors
    modules = floors_test._modules() if modules is None else modules
    rows = ["| floor | package | modules | lines | what it holds |", "|---|---|---|---|---|"]
    for number in reversed(range(len(floors))):
        for package in floors[number]:
            if package not in modules:
                raise ValueError(f"{package} (floor {number} of FLOORS) has no module in the tree")
            doc = ast.get_docstring(ast.parse(modules[package].read_text(encoding="utf-8")))
            if not doc:
                raise ValueError(f"{package} has no docstring to describe it: write one in {modules[package]}")
            own = [path for name, path in modules.items() if floors_test._package(name) == package]
            lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in own)
            cells = (str(number), _shown(package, modules[package]), str(len(own)), rounded_lines(lines))
            rows.append(f"| {' | '.join(cells)} | {first_sentence(doc)} |")
    return "\n".join(rows) + "\n"


def regenerated(text: str) -> str:
    """``text`` (docs/architecture.md) with the floors table replaced by the one the floors test gives."""
    return splice(text, TABLE, floors_table())


def main(argv: list[str]) -> int:
    """Write (or with --check, compare) the floors table of docs/architecture.md."""
    path = REPO / DOC
    text = path.read_text(encoding="utf-8")
    wanted = regenerated(text)
    if wanted != text and "--check" not in argv:
        path.write_text(wanted, encoding="utf-8")
    state = "up to date" if wanted == text else ("differs" if "--check" in argv else "updated")
    print(f"{DOC}: floors table {state}")
    return 1 if wanted != text and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
