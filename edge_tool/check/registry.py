"""The one table of check targets: each module under ``check/targets`` registers its ``TargetSpec`` with
``TARGETS.register(spec)`` (importing ``edge_tool.check.targets`` fills it, in the order ``--help``, the report and
``--target all`` use)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.convert.modes import MODES
from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class TargetSpec:
    """A target: its name, one line on what it is, which artefact it checks, the check itself, and the check that
    decides it by running on a ``--device`` (None: checked on this host even when a device is given).

    ``artefact`` is what a SavedModel is turned into for it: ``fp32`` / ``int8`` (a .tflite), ``int8-b1``
    (the full-integer .tflite with batch fixed to 1 that ``demo --litert`` ships) or ``tfjs`` (a graph model).
    """

    name: str
    summary: str
    artefact: str
    run: Callable  # (Subject) -> TargetResult
    on_device: Callable | None = None  # (Subject, DeviceURL) -> TargetResult

    @property
    def needs_calibration(self) -> bool:
        """True when its artefact is built in a mode that needs representative data (``int8``, ``int8-b1``)."""
        mode = self.artefact.partition("-")[0]  # the artefact is a mode, with -b1 for a fixed batch
        return mode in MODES and MODES[mode].needs_calibration


TARGETS: Registry[TargetSpec] = Registry("check target")
