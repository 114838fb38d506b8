"""``edgetool eval``: accuracy drift of TFLite / TFJS artefacts against the reference SavedModel, and latency.

Light at import (no TensorFlow): the heavy runners are imported inside the functions that need them.
Public API: :class:`EvalConfig`, :func:`run_eval`, :func:`budget_violations`, :class:`Report`.
"""

from __future__ import annotations

from edge_tool.evaluate.budgets import budget_violations as _gate
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.pipeline import run_eval as _run
from edge_tool.evaluate.report import Report
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats


def run_eval(config: EvalConfig) -> Report:
    """Measure every artefact of ``config`` against its reference and return the frozen Report."""
    return _run(config)


def budget_violations(report: Report, config: EvalConfig) -> list[tuple[str, str]]:
    """(artifact, message) per budget broken (--max-drop / --max-latency-ms), naming by how much."""
    return _gate(report, config)


__all__ = ["ArtifactFormat", "ArtifactResult", "EvalConfig", "LatencyStats", "Report", "budget_violations", "run_eval"]
