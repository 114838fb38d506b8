"""Helpers shared by the target checks."""

from __future__ import annotations

from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, Verdict


def model_ops(path: Path) -> list[str]:
    """Op names of a .tflite in first-use order (builtin names, custom codes as written)."""
    from edge_tool.tflite_model import summarize_tflite  # noqa: PLC0415

    return list(summarize_tflite(Path(path).read_bytes()).ops)


def conversion_failed(target: str, subject, exc: Exception) -> TargetResult:
    """The verdict when the artefact a target needs cannot even be made from the model."""
    finding = Finding("(conversion)", Status.UNSUPPORTED, str(exc)[:1500])
    return TargetResult(target, subject.label, Verdict.FAILS, (finding,), "conversion of the model for this target")

