"""Regenerate the mode and format tables in README.md and docs/convert.md from edgetool's registries.

Usage: python scripts/mode_table.py [--check]   (--check: exit 1 when a file's table differs, write nothing)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_tool.convert.formats import with_format_table  # noqa: E402
from edge_tool.convert.modes import with_mode_table  # noqa: E402

FILES = ("README.md", "docs/convert.md")


def main(argv: list[str]) -> int:
    """Write (or with --check, compare) the generated table in every file of FILES."""
    stale = []
    for name in FILES:
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        wanted = with_format_table(with_mode_table(text))
        if wanted != text:
            stale.append(name)
            if "--check" not in argv:
                path.write_text(wanted, encoding="utf-8")
    verb = "differ" if "--check" in argv else "updated"
    print(f"mode/format tables {verb}: {', '.join(stale)}" if stale else "mode and format tables up to date")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
