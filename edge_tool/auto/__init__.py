"""``convert --quant auto``: build every quantization candidate, measure it with ``edgetool eval``'s machinery,
and keep the best one within an accuracy budget (selective int8 when full int8 loses too much).

Layout of OUTDIR: the chosen ``.tflite`` at the top, every other candidate under ``candidates/`` (with the
convert ``manifest.json``), ``decision.json`` and ``decision.md`` (the same table).

Modules: ``config`` (the options), ``result`` (candidates, the result and decision.json), ``policy`` (which
candidate wins), ``run`` (build, measure, write), ``render`` (decision.md and the terminal table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge_tool.core.lazy import lazy_names

# public name -> module, loaded on first access (PEP 562): ``convert --help`` reads ``auto.config`` alone
_EXPORTS = {
    "INTEGER_RANK": "edge_tool.auto.policy",
    "LATENCY_TIE": "edge_tool.auto.policy",
    "LATENCY_TIE_MS": "edge_tool.auto.policy",
    "SELECTIVE": "edge_tool.auto.config",
    "SIZE_TIE": "edge_tool.auto.policy",
    "AutoConfig": "edge_tool.auto.config",
    "AutoResult": "edge_tool.auto.result",
    "Candidate": "edge_tool.auto.result",
    "Decision": "edge_tool.auto.result",
    "Objective": "edge_tool.auto.config",
    "budget_error": "edge_tool.auto.render",
    "choose": "edge_tool.auto.policy",
    "print_result": "edge_tool.auto.render",
    "run_auto": "edge_tool.auto.run",
    "to_markdown": "edge_tool.auto.render",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the names above, for type checkers and IDEs
    from edge_tool.auto.config import SELECTIVE, AutoConfig, Objective  # noqa: F401
    from edge_tool.auto.policy import INTEGER_RANK, LATENCY_TIE, LATENCY_TIE_MS, SIZE_TIE, choose  # noqa: F401
    from edge_tool.auto.render import budget_error, print_result, to_markdown  # noqa: F401
    from edge_tool.auto.result import AutoResult, Candidate, Decision  # noqa: F401
    from edge_tool.auto.run import run_auto  # noqa: F401


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
