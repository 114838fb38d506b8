"""The capability table of TFLite modes: each module under ``convert/modes`` builds its ``ModeSpec`` and registers it
with ``MODES.register(spec)``.

A row says what a mode makes (weight and activation types), what it needs (calibration data, training data, a
Keras model), which inference I/O types it allows, whether ``--quant auto`` tries it and how integer it is (auto's
tie-break), how close a float file must stay to the SavedModel (convert's self-check), and how it builds its
flatbuffer. Importing ``edge_tool.convert.modes`` fills it. Its readers: ``ConvertConfig`` validation (I/O
types, training data), ``convert()`` (calibration, the builder, the self-check), the ``--quant`` help and choices
and ``all`` (``commands/convert.py``), which modes a float .tflite source can be quantized to, ``--quant auto``'s candidates and tie-break, the mode table in README.md and
docs/convert.md (``modes.mode_table``, checked by tests/test_docs_tables.py), and the mode lists of tests and
benchmarks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class ModeSpec:
    """One TFLite quantization mode: what it makes and what it needs."""

    name: str  # the --quant value (convert.modes.QuantMode is derived from these names)
    weights: str  # weight type in the .tflite
    activations: str  # activation type at inference
    build: Callable  # (BuildContext) -> bytes
    needs_calibration: bool = False
    needs_train_data: bool = False
    needs_keras: bool = False  # fine-tunes the Keras model itself (a Keras-2 SavedModel/.keras/.h5)
    auto_candidate: bool = True  # tried by --quant auto (fp32 is the unquantized baseline, not a candidate)
    # --quant auto's tie-break among equally accurate candidates: lower runs on more integer hardware (full int8
    # on the Edge TPU, NPUs and DSPs; dynamic range keeps float activations); None for a mode auto never ranks
    integer_rank: int | None = None
    # convert's self-check of a float file: max |tflite - SavedModel| on seeded probes, relative to
    # max(1, max |SavedModel output|); None for a quantized mode (its error is data-dependent: eval measures it)
    self_check_tolerance: float | None = None
    io_types: tuple[str, ...] = ("model", "float32")
    integer_only: bool = False  # int8 activations end to end: --require integer-only, the file's float-op check
    # the edge_tool.tflite_quantizer recipe that builds this mode from a float .tflite given as the source (convert
    # model.tflite); None: the mode needs the SavedModel (the TFLite converter, or the Keras model itself)
    tflite_recipe: str | None = None
    in_all: bool = True  # built by --quant all (False: built when named)

    @property
    def weight_bits(self) -> int:
        """Bits per stored weight, read from ``weights`` (float32 → 32, float16 → 16, int8 … → 8, int4 … → 4)."""
        return int(re.match(r"(?:float|int)(\d+)", self.weights).group(1))

    @property
    def summary(self) -> str:
        """One line for ``--help``: weight and activation types."""
        return f"weights {self.weights}, activations {self.activations}"


MODES: Registry[ModeSpec] = Registry("quantization mode")
