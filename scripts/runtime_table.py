"""Regenerate the runtime table in README.md and docs/eval.md from edgetool's runtime registry.

Usage: python scripts/mode_table.py [--check]   (--check: exit 1 when a file's table differs, write nothing)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_tool.evaluate.runtimes import with_runtime_table  # noqa: E402

FILES = ("README.md", "docs/eval.md")


def main(argv: list[str]) -> int:
    """Write (or with --check, compare) the generated table in every file of FILES."""
    stale = []
    for name in FILES:
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        wanted = with_runtime_table(text)
        if wanted != text:
            stale.append(name)
            if "--check" not in argv:
                path.write_text(wanted, encoding="utf-8")
    verb = "differ" if "--check" in argv else "updated"
    print(f"runtime table {verb}: {', '.join(stale)}" if stale else "runtime tables up to date")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
