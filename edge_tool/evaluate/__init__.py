"""``edgetool eval``: accuracy drift of TFLite / TFJS artefacts against the reference SavedModel, and latency.

Light at import (no TensorFlow, and none of the modules below until a name is used: ``edgetool --help`` reads the
runtime table under ``evaluate.runtimes``). Public API: :class:`EvalConfig`, :func:`run_eval`,
:func:`budget_violations`, :class:`Report`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> (module, attribute), loaded on first access (PEP 562)
_EXPORTS = {
    "ArtifactFormat": ("edge_tool.models.readers", "ArtifactFormat"),
    "ArtifactResult": ("edge_tool.evaluate.rows", "ArtifactResult"),
    "EvalConfig": ("edge_tool.evaluate.config", "EvalConfig"),
    "LatencyStats": ("edge_tool.evaluate.rows", "LatencyStats"),
    "Report": ("edge_tool.evaluate.report", "Report"),
    "budget_violations": ("edge_tool.evaluate.budgets", "budget_violations"),
    "run_eval": ("edge_tool.evaluate.pipeline", "run_eval"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the names above, for type checkers and IDEs
    from edge_tool.evaluate.budgets import budget_violations  # noqa: F401
    from edge_tool.evaluate.config import EvalConfig  # noqa: F401
    from edge_tool.evaluate.pipeline import run_eval  # noqa: F401
    from edge_tool.evaluate.report import Report  # noqa: F401
    from edge_tool.evaluate.rows import ArtifactResult, LatencyStats  # noqa: F401
    from edge_tool.models.readers import ArtifactFormat  # noqa: F401


def __getattr__(name: str) -> Any:
    """Load a public name's module on first access (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
