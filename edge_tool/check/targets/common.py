"""Helpers shared by the target checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, Unavailable, Verdict
from edge_tool.parsers.tflite_model import summarize_tflite


def model_ops(path: Path) -> list[str]:
    """Op names of a .tflite in first-use order (builtin names, custom codes as written)."""
    return list(summarize_tflite(Path(path).read_bytes()).ops)


def conversion_failed(target: str, subject, exc: Exception) -> TargetResult:
    """The verdict when the artefact a target needs cannot even be made from the model."""
    finding = Finding("(conversion)", Status.UNSUPPORTED, str(exc)[:1500])
    return TargetResult(target, subject.label, Verdict.FAILS, (finding,), "conversion of the model for this target")


def of_artefact(target: str, kind: str, check: Callable) -> Callable:
    """A target's ``run(subject)`` from ``check(path)``, ``path`` being the subject's ``kind`` artefact; when that
    cannot be made, the verdict says so (:func:`conversion_failed`) without calling ``check``."""

    def run(subject) -> TargetResult:
        try:
            path = subject.artefact(kind)
        except Unavailable as exc:
            return conversion_failed(target, subject, exc)
        return check(path)

    return run
