"""Vendor the pinned tfjs and LiteRT.js runtimes into web_demo/vendor/ (scripts/setup.sh runs this once).

Usage: python scripts/vendor_runtimes.py [--quiet]
Runs ``npm ci`` in web_demo/ only when the vendored files are missing or package-lock.json changed, then copies
the files the demo page loads (``edge_tool.demo.vendor.ensure_vendored``). Needs node + npm; exit 2 on failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edge_tool.demo.vendor import ensure_vendored
from edge_tool.errors import UsageError


def main(argv: list[str]) -> int:
    """Vendor the runtimes; print the error and return 2 when that is impossible."""
    unknown = [a for a in argv if a != "--quiet"]
    if unknown:
        print(
            f"error: unknown argument(s) {' '.join(unknown)}; usage: python scripts/vendor_runtimes.py [--quiet]",
            file=sys.stderr,
        )
        return 2
    try:
        ensure_vendored(quiet="--quiet" in argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
