"""What a target check reports: findings per op, a verdict, how it was decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from edge_tool.calibration.serial import Record


class Unavailable(Exception):
    """The artefact a target needs could not be made from this model (the reason is the target's finding)."""


class Verdict(str, Enum):
    """``runs``: everything runs there; ``partial``: runs, with the ops listed falling back to the CPU;
    ``fails``: will not run there (exit code 1)."""

    RUNS = "runs"
    PARTIAL = "partial"
    FAILS = "fails"


class Status(str, Enum):
    """What happens to one op (or the whole model) on the target."""

    UNSUPPORTED = "unsupported"  # will not run: the model fails there
    FALLBACK = "fallback"  # runs elsewhere (CPU) while the rest is accelerated


@dataclass(frozen=True)
class Finding(Record):
    """One op (or ``(model)`` for whole-model requirements) that will not run or will fall back, and why."""

    op: str
    status: Status
    reason: str


@dataclass(frozen=True)
class TargetResult(Record):
    """A target's verdict on one artefact, every finding, how it was checked, and extra facts (e.g. the arena)."""

    target: str
    artefact: str
    verdict: Verdict
    findings: tuple[Finding, ...]
    method: str
    details: dict = field(default_factory=dict)


def verdict_of(findings: list[Finding] | tuple[Finding, ...]) -> Verdict:
    """FAILS if any finding is unsupported, PARTIAL if any falls back, else RUNS."""
    statuses = {f.status for f in findings}
    if Status.UNSUPPORTED in statuses:
        return Verdict.FAILS
    return Verdict.PARTIAL if Status.FALLBACK in statuses else Verdict.RUNS


def target_result(target: str, artefact, findings, method: str, details: dict | None = None) -> TargetResult:
    """``target``'s result on ``artefact`` (a path or label): the verdict of ``findings``, them, how it was checked."""
    return TargetResult(
        target, str(artefact), verdict_of(findings), tuple(findings), method, {} if details is None else details
    )
