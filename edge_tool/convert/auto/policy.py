"""Which candidate ``auto`` keeps: the objective's measure, with ties broken by accuracy and integer-only-ness."""

from __future__ import annotations

from edge_tool.convert.auto.config import SELECTIVE, Objective
from edge_tool.convert.auto.result import Candidate

SIZE_TIE = 0.02         # sizes within 2 % of the smallest count as equal (full int8 carries a few more scales)
LATENCY_TIE = 0.05      # p50s within 5 % of the fastest count as equal ...
LATENCY_TIE_MS = 0.005  # ... or within 5 µs: one tiny file's p50 moved 5.5-8.3 µs over six runs on 2 cores
# A full tie (size and latency) goes to the more accurate, then to the more integer-only candidate: full int8
# runs on integer accelerators (Edge TPU, NPUs, DSPs); dynamic range keeps float activations.
INTEGER_RANK = {"int8": 0, "qat": 0, SELECTIVE: 1, "int16x8": 2, "dynamic": 3, "fp16": 4}


def _size_tied(cands: list[Candidate]) -> list[Candidate]:
    smallest = min(c.size_bytes for c in cands)
    return [c for c in cands if c.size_bytes <= smallest * (1 + SIZE_TIE)]


def _latency_tied(cands: list[Candidate]) -> list[Candidate]:
    fastest = min(_lat(c) for c in cands)
    limit = max(fastest * (1 + LATENCY_TIE), fastest + LATENCY_TIE_MS)
    return [c for c in cands if _lat(c) <= limit]


def _lat(c: Candidate) -> float:
    return c.latency_ms_p50 if c.latency_ms_p50 is not None else float("inf")


def _acc(c: Candidate) -> float:
    return c.accuracy if c.accuracy is not None else float("-inf")


def choose(candidates: list[Candidate], objective: Objective) -> Candidate | None:
    """The best candidate within budget.

    size: the candidates within SIZE_TIE of the smallest, narrowed to those within the latency tie of the
    fastest of them; latency: the other way round. What is left is ordered by accuracy (higher first), then
    INTEGER_RANK, then the objective's measure, then build order (fp16, dynamic, int8, int16x8, qat,
    int8-selective: ``min`` keeps the first of equals).
    """
    ok = [c for c in candidates if c.meets_budget]
    if not ok:
        return None
    if objective is Objective.SIZE:
        near, measure = _latency_tied(_size_tied(ok)), (lambda c: c.size_bytes)
    else:
        near, measure = _size_tied(_latency_tied(ok)), _lat
    return min(near, key=lambda c: (-_acc(c), INTEGER_RANK.get(c.name, len(INTEGER_RANK)), measure(c)))
