"""``edgetool eval``: accuracy drift of TFLite / TFJS artefacts against the reference SavedModel, and latency.

Light at import (no TensorFlow, and none of the modules below until a name is used: ``edgetool --help`` reads the
runtime table under ``evaluate.runtimes``). Public API: :class:`EvalConfig`, :func:`run_eval`,
:func:`budget_violations`, :class:`Report`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge_tool.core.lazy import lazy_names

# public name -> module, loaded on first access (PEP 562)
_EXPORTS = {
    "ArtifactFormat": "edge_tool.models.readers",
    "ArtifactResult": "edge_tool.evaluate.rows",
    "EvalConfig": "edge_tool.evaluate.config",
    "LatencyStats": "edge_tool.evaluate.rows",
    "Report": "edge_tool.evaluate.report",
    "budget_violations": "edge_tool.evaluate.budgets",
    "run_eval": "edge_tool.evaluate.pipeline",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the names above, for type checkers and IDEs
    from edge_tool.evaluate.budgets import budget_violations  # noqa: F401
    from edge_tool.evaluate.config import EvalConfig  # noqa: F401
    from edge_tool.evaluate.pipeline import run_eval  # noqa: F401
    from edge_tool.evaluate.report import Report  # noqa: F401
    from edge_tool.evaluate.rows import ArtifactResult, LatencyStats  # noqa: F401
    from edge_tool.models.readers import ArtifactFormat  # noqa: F401


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
