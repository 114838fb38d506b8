"""Which candidate ``auto`` keeps: the objective's measure, with ties broken by accuracy and integer-only-ness."""

from __future__ import annotations

from edge_tool.auto.config import SELECTIVE, Objective
from edge_tool.auto.result import Candidate
from edge_tool.convert.modes import MODES

SIZE_TIE = 0.02  # sizes within 2 % of the smallest count as equal (full int8 carries a few more scales)
LATENCY_TIE = 0.05  # p50s within 5 % of the fastest count as equal ...
LATENCY_TIE_MS = 0.005  # ... or within 5 µs: a tiny file's p50 moves that much from run to run (docs/performance.md)
# A full tie (size and latency) goes to the more accurate, then to the more integer-only candidate: each mode's
# ModeSpec.integer_rank, and selective int8 (int8 with a few layers kept in float) just after int8.
INTEGER_RANK = {name: s.integer_rank for name, s in MODES.items() if s.integer_rank is not None} | {
    SELECTIVE: MODES["int8"].integer_rank + 1
}


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


def _kb(c: Candidate) -> str:
    return f"{c.size_bytes / 1e3:.1f} kB"


def _more(a: float, b: float) -> str:
    """How much larger ``a`` is than ``b``, in percent (``b`` > 0)."""
    return f"{100 * (a / b - 1):.0f} %" if b > 0 else "more"


def _why_among(best: Candidate, tied: list[Candidate]) -> str:
    """Why ``best`` won among candidates tied on size and latency (choose's accuracy, then integer-only order)."""
    others = [c for c in tied if c is not best]
    if _acc(best) > max(_acc(c) for c in others):
        return f"{best.name} is the most accurate of them ({100 * _acc(best):.2f} %)"
    rank = INTEGER_RANK.get(best.name, len(INTEGER_RANK))
    if rank < min(INTEGER_RANK.get(c.name, len(INTEGER_RANK)) for c in others):
        return f"equally accurate, and {best.name} is the more integer-only (it runs on integer accelerators)"
    return f"equally accurate; {best.name} comes first"


def reason(
    candidates: list[Candidate], objective: Objective, require: str | None = None, where: str = "this host"
) -> str | None:
    """One sentence on why ``choose`` picked what it picked (e.g. "int8 and dynamic tie on size within 2 %;
    dynamic is 40 % faster on this host"), None when nothing met the budget; ``where`` names what measured the
    latency (a --device board)."""
    best = choose(candidates, objective)
    if best is None:
        return None
    ok = [c for c in candidates if c.meets_budget]
    size = objective is Objective.SIZE
    first, second = (_size_tied, _latency_tied) if size else (_latency_tied, _size_tied)
    word, other_word = ("size", "latency") if size else ("latency", "size")
    board = "" if where == "this host" else f" on {where}"
    tied = first(ok)
    if len(tied) == 1:
        runner = min((c for c in ok if c is not best), key=lambda c: c.size_bytes if size else _lat(c), default=None)
        text = f"{best.name} is the {'smallest' if size else 'fastest' + board} within the budget"
        if runner is None:
            text = f"{best.name} is the only {require + ' ' if require else ''}candidate within the budget"
        else:
            text += (
                f" ({_kb(best)}; {runner.name} is {_more(runner.size_bytes, best.size_bytes)} larger)"
                if size
                else f" (p50 {_lat(best):.3f} ms; {runner.name} is {_more(_lat(runner), _lat(best))} slower)"
            )
    else:
        tie = f"{100 * (SIZE_TIE if size else LATENCY_TIE):.0f} %"
        text = f"{' and '.join(c.name for c in tied)} tie on {word}{'' if size else board} within {tie}"
        near = second(tied)
        slower = [c for c in tied if c not in near]
        if slower:
            ref = min(slower, key=lambda c: _lat(c) if size else c.size_bytes)
            text += (
                f"; {best.name} is {_more(_lat(ref), _lat(best))} faster on {where} than {ref.name}"
                if size
                else f"; {best.name} is {_more(ref.size_bytes, best.size_bytes)} smaller than {ref.name}"
            )
        if len(near) > 1:
            text += (
                f" and on {other_word}"
                if len(near) == len(tied)
                else f"; {' and '.join(c.name for c in near)} also tie on {other_word}"
            )
            text += f"; {_why_among(best, near)}"
    if where != "this host" and where not in text:
        text += f" (measured on {where})"
    measure = (lambda c: c.size_bytes) if size else _lat
    beaten = [
        c
        for c in candidates
        if not c.meets_budget
        and not c.failed
        and c.accuracy_drop is not None
        and measure(c) is not None
        and measure(c) < measure(best)
    ]
    if beaten:
        c = min(beaten, key=measure)
        text += f" ({c.name} is {'smaller' if size else 'faster'} but lost {100 * c.accuracy_drop:.1f} pt)"
    return text
