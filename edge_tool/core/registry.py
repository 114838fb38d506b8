"""The one shape of edgetool's plug-in tables: modes, formats, format readers, runtimes, check targets and tasks.

Each table is a ``Registry`` (a dict by name) that the modules plugging into it fill at import with
``TABLE.register(spec)``: a frozen spec whose ``name`` is its key. Everything else (CLI choices, name lists, docs
tables, report columns, schema enums) is derived from it. A name registered twice is a programming error, raised at
import rather than one entry silently replacing the other.
"""

from __future__ import annotations

from enum import Enum
from typing import Generic, TypeVar

V = TypeVar("V")


class Registry(dict[str, V], Generic[V]):
    """A plug-in table: ``register`` each spec once (keyed by its ``name``); read it as a dict."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind  # what an entry is, for the error ("runtime", "output format")

    def register(self, spec: V) -> V:
        """Add ``spec`` under ``spec.name`` and return it; ValueError when that name is taken."""
        name = spec.name
        if name in self:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self[name] = spec
        return spec

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(str(n.value if isinstance(n, Enum) else n) for n in self)

    def choices(self, enum_name: str, *extra: str) -> type[Enum]:
        """A ``str`` Enum of the registered names (plus ``extra`` ones such as ``all``), for CLI choices."""
        values = (*self.names(), *extra)
        return Enum(enum_name, {v.upper().replace("-", "_"): v for v in values}, type=str)
