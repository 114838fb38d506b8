"""Selective int8: full-integer quantization with the worst-quantized layers kept in float.

``tf.lite.experimental.QuantizationDebugger`` calibrates the model once (from a converter set up for full
int8), measures each quantized op against its float counterpart on the calibration data, and can re-quantize
the calibrated model with a denylist of op output tensors that stay float. Layers are ranked by rmse/scale
(the debugger's standard measure: ~0.29 is ideal rounding, larger means the layer quantizes badly).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edge_tool.tflite_converter.per_layer import LayerError, calibrate_and_rank, quiet_debugger
from edge_tool.tflite_converter.run import Refusal, run_converter

IDEAL_RMSE_OVER_SCALE = 0.2887  # 1/sqrt(12): uniform rounding error of a well-quantized tensor


class SelectiveInt8:
    """One calibrated int8 quantization of a model, re-quantizable with any set of layers left in float."""

    def __init__(self, tf, converter, inputs: Mapping[str, np.ndarray], label: str) -> None:
        """Calibrate ``tflite_converter`` (fresh, from ``new_converter``) for full int8 and measure per-layer errors.

        ``inputs`` (``{input name: samples}``) serve both as calibration and as the debugger's comparison
        data, fed by name. Denylisted layers later become float builtins beside the int8 ones. Raises
        ConversionError when the converter or the debugger fails.
        """
        self._tf = tf
        self._label = label
        self._debugger, self._ranking = calibrate_and_rank(
            tf,
            converter,
            inputs,
            self._refusal(f"The quantization debugger could not calibrate {label} for int8"),
            float_fallback=True,
        )

    @property
    def ranking(self) -> tuple[LayerError, ...]:
        """Every quantized layer, worst rmse/scale first."""
        return self._ranking

    def candidates(self, limit: int) -> tuple[LayerError, ...]:
        """The worst ``limit`` layers worth keeping in float (rmse/scale above ideal rounding), worst first."""
        bad = [e for e in self._ranking if e.rmse_over_scale > IDEAL_RMSE_OVER_SCALE]
        return tuple(bad[:limit])

    def build(self, float_tensors: list[str]) -> bytes:
        """The int8 model with the ops producing ``float_tensors`` left in float (float model I/O)."""
        tf = self._tf

        def quantize(_converter) -> bytes:
            with quiet_debugger():
                self._debugger.options = tf.lite.experimental.QuantizationDebugOptions(
                    denylisted_nodes=list(float_tensors)
                )
                return self._debugger.get_nondebug_quantized_model()

        return run_converter(
            self._debugger.converter,
            self._refusal(f"Re-quantizing {self._label} with {', '.join(float_tensors)} in float failed"),
            quantize,
        )

    def _refusal(self, failed: str) -> Refusal:
        return Refusal(
            self._label,
            failed,
            builtin_only="Selective int8 keeps to builtin ops (its float layers are "
            "builtin float ops): replace them in the model.",
        )
