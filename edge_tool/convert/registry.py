"""The capability table of TFLite modes, filled by ``@register`` in each module under ``convert/modes``.

A row says what a mode needs (calibration or training data), which inference I/O types it allows, and how it
builds its flatbuffer. Importing ``edge_tool.convert.modes`` fills it; ``ConvertConfig`` validation, ``convert``
and the ``--quant`` help read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.convert.enums import QuantMode


@dataclass(frozen=True)
class ModeSpec:
    """One TFLite quantization mode and what it needs."""

    mode: QuantMode
    summary: str
    build: Callable  # (BuildContext) -> bytes
    needs_calibration: bool = False
    needs_train_data: bool = False
    io_types: tuple[str, ...] = ("model", "float32")


MODES: dict[QuantMode, ModeSpec] = {}


def register(mode: QuantMode, summary: str, **caps) -> Callable:
    """Decorator: register ``build`` as the builder of ``mode`` with the given capabilities."""

    def deco(build: Callable) -> Callable:
        MODES[mode] = ModeSpec(mode=mode, summary=summary, build=build, **caps)
        return build

    return deco
