"""The capability table of TFLite modes, filled by ``@register`` in each module under ``convert/modes``.

A row says what a mode needs (calibration data, training data, a Keras-reloadable model), which
inference I/O types it allows, and how it builds its flatbuffer. The CLI's choices, validation, the
README table and the benchmark matrix all read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.convert.config import QuantMode


@dataclass(frozen=True)
class ModeSpec:
    """One TFLite quantization mode and what it needs."""

    mode: QuantMode
    summary: str
    build: Callable  # (BuildContext) -> bytes
    needs_calibration: bool = False
    needs_train_data: bool = False
    needs_keras: bool = False
    io_types: tuple[str, ...] = ("model", "float32")
    expected_size_ratio: float = 1.0  # vs fp32, for weight-dominated models


MODES: dict[QuantMode, ModeSpec] = {}


def register(mode: QuantMode, summary: str, **caps) -> Callable:
    """Decorator: register ``build`` as the builder of ``mode`` with the given capabilities."""

    def deco(build: Callable) -> Callable:
        MODES[mode] = ModeSpec(mode=mode, summary=summary, build=build, **caps)
        return build

    return deco


def _load_all() -> None:
    from edge_tool.convert.modes import dynamic, fp16, fp32, int8, int16x8, qat  # noqa: F401, PLC0415


_load_all()
