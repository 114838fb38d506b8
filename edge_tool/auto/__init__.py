"""``convert --quant auto``: build every quantization candidate, measure it with ``edgetool eval``'s machinery,
and keep the best one within an accuracy budget (selective int8 when full int8 loses too much).

Layout of OUTDIR: the chosen ``.tflite`` at the top, every other candidate under ``candidates/`` (with the
convert ``manifest.json``), ``decision.json`` and ``decision.md`` (the same table).

Modules: ``config`` (the options), ``result`` (candidates, the result and decision.json), ``policy`` (which
candidate wins), ``run`` (build, measure, write), ``render`` (decision.md and the terminal table).
"""

from __future__ import annotations

from edge_tool.auto.config import SELECTIVE, AutoConfig, Objective
from edge_tool.auto.policy import INTEGER_RANK, LATENCY_TIE, LATENCY_TIE_MS, SIZE_TIE, choose
from edge_tool.auto.render import budget_error, print_result, to_markdown
from edge_tool.auto.result import AutoResult, Candidate, Decision
from edge_tool.auto.run import run_auto

__all__ = [
    "INTEGER_RANK",
    "LATENCY_TIE",
    "LATENCY_TIE_MS",
    "SELECTIVE",
    "SIZE_TIE",
    "AutoConfig",
    "AutoResult",
    "Candidate",
    "Decision",
    "Objective",
    "budget_error",
    "choose",
    "print_result",
    "run_auto",
    "to_markdown",
]
