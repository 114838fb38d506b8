"""Generated Markdown tables kept inside hand-written docs: the part between ``<!-- NAME-table:start -->`` and
``<!-- NAME-table:end -->`` is the generator's (scripts/docs_tables.py writes them; tests/test_docs_tables.py
checks them)."""

from __future__ import annotations


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of table ``name`` ("modes" -> ``<!-- modes-table:start -->``, …)."""
    return f"<!-- {name}-table:start -->", f"<!-- {name}-table:end -->"


def splice(text: str, name: str, table: str) -> str:
    """``text`` with the part between table ``name``'s markers replaced by ``table``; ValueError when the markers
    are missing or out of order."""
    start_marker, end_marker = markers(name)
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"expected the markers {start_marker} … {end_marker} around the {name} table")
    return text[: start + len(start_marker)] + "\n" + table + text[end:]
