"""The one shape of edgetool's plug-in tables: modes, formats, format readers, runtimes, check targets and tasks.

Each table is a ``Registry`` (a dict by name) filled at import by the modules that plug into it; everything else
(CLI choices, docs tables, report columns) is derived from it. A name registered twice is a programming error,
raised at import rather than one entry silently replacing the other.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Registry(dict[K, V]):
    """A plug-in table: ``add`` each entry once under its name; read it as a dict."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind  # what an entry is, for the error ("runtime", "output format")

    def add(self, name: K, entry: V) -> V:
        """Register ``entry`` under ``name``; ValueError when ``name`` is taken."""
        if name in self:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self[name] = entry
        return entry
