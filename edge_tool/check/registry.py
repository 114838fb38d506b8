"""The one table of check targets, filled by ``@register`` in each module under ``check/targets`` (importing
``edge_tool.check.targets`` fills it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class TargetSpec:
    """A target: its name, one line on what it is, which artefact it checks, and the check itself.

    ``artefact`` is what a SavedModel is turned into for it: ``fp32`` / ``int8`` (a .tflite), ``int8-b1``
    (the full-integer .tflite with batch fixed to 1 that ``demo --litert`` ships) or ``tfjs`` (a graph model).
    """

    name: str
    summary: str
    artefact: str
    run: Callable  # (Subject) -> TargetResult


TARGETS: Registry[str, TargetSpec] = Registry("check target")


def register(name: str, summary: str, artefact: str) -> Callable:
    """Decorator: register ``run`` as the check of target ``name``."""

    def deco(run: Callable) -> Callable:
        TARGETS.add(name, TargetSpec(name, summary, artefact, run))
        return run

    return deco


# The order ``--help``, the report and ``--target all`` use; kept here so the CLI need not import the targets.
TARGET_NAMES = ("litert-cpu", "gpu", "tflm", "tfjs", "litertjs", "edgetpu")
