"""The capability table of TFLite modes, filled by ``@register`` in each module under ``convert/modes``.

A row says what a mode makes (weight and activation types), what it needs (calibration data, training data, a
Keras model), which inference I/O types it allows, whether ``--quant auto`` tries it, and how it builds its
flatbuffer. Importing ``edge_tool.convert.modes`` fills it. Its readers: ``ConvertConfig`` validation (I/O
types, training data), ``convert()`` (calibration, the builder), the ``--quant`` help and choices and ``all``
(``commands/convert.py``), ``--quant auto``'s candidates, the mode table in README.md and docs/convert.md
(``modes.mode_table``, checked by tests/test_docs_tables.py), and the mode lists of tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.convert.enums import QuantMode
from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class ModeSpec:
    """One TFLite quantization mode: what it makes and what it needs."""

    mode: QuantMode
    weights: str  # weight type in the .tflite
    activations: str  # activation type at inference
    build: Callable  # (BuildContext) -> bytes
    needs_calibration: bool = False
    needs_train_data: bool = False
    needs_keras: bool = False  # fine-tunes the Keras model itself (a Keras-2 SavedModel/.keras/.h5)
    auto_candidate: bool = True  # tried by --quant auto (fp32 is the unquantized baseline, not a candidate)
    io_types: tuple[str, ...] = ("model", "float32")

    @property
    def summary(self) -> str:
        """One line for ``--help``: weight and activation types."""
        return f"weights {self.weights}, activations {self.activations}"


MODES: Registry[QuantMode, ModeSpec] = Registry("quantization mode")


def register(mode: QuantMode, *, weights: str, activations: str, **caps) -> Callable:
    """Decorator: register ``build`` as the builder of ``mode`` with the given capabilities."""

    def deco(build: Callable) -> Callable:
        MODES.add(mode, ModeSpec(mode=mode, weights=weights, activations=activations, build=build, **caps))
        return build

    return deco
