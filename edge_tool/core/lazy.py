"""Public names of a package loaded from their modules on first access (PEP 562), so importing the package stays
light (``edgetool --help`` reads parts of ``evaluate`` and ``auto`` without loading their pipelines)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose public name N lives in module ``exports[N]``: the module is
    imported when N is first read, and N is then kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *exports])

    return __getattr__, __dir__
