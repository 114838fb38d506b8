"""Worst-quantized layers of an int8 model, from tf.lite.experimental.QuantizationDebugger.

The debugger compares each quantized tensor with its float counterpart, so it needs the float model: it is
rebuilt here from the reference SavedModel with a converter configured for full int8
(Optimize.DEFAULT + TFLITE_BUILTINS_INT8) and the eval data as representative dataset. The figures therefore
describe an int8 quantization of the reference on the eval data, which matches the artefact when the artefact
was made the same way (same calibration data gives identical scales; other calibration data, similar ones).

Bounded sample: the debugger runs on the first MAX_DEBUG_SAMPLES samples of the eval data (in data order),
which the streaming eval pass keeps aside; the rest of the data only flows through the drift metrics.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import warnings
from pathlib import Path

from edge_tool.errors import ConversionError
from edge_tool.evaluate.report import LayerError

MAX_DEBUG_SAMPLES = 100  # samples the per-layer debugger sees (the first ones of --data)


def worst_layers(saved_model: Path, inputs: dict, input_order: list[str], top: int) -> tuple[LayerError, ...]:
    """The ``top`` layers with the largest rmse/scale (the debugger's standard quantization-error measure).

    ``inputs`` maps input names to samples in their own dtypes; the ``input_order`` names are fed, by name.
    """
    from edge_tool.env import import_tf  # noqa: PLC0415

    from edge_tool.feeding import quantization_debugger  # noqa: PLC0415

    tf = import_tf()
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved_model))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    dump = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            # the debugger itself still runs tf.lite.Interpreter, which warns about its own deprecation
            warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated.*")
            debugger = quantization_debugger(tf, converter, {name: inputs[name] for name in input_order},
                                             MAX_DEBUG_SAMPLES)
            debugger.run()
        debugger.layer_statistics_dump(dump)
    except (ValueError, RuntimeError) as exc:
        raise ConversionError(f"The quantization debugger could not rebuild an int8 model of {saved_model}: {exc}") from None
    return rank_layers(dump.getvalue(), top)


def rank_layers(csv_text: str, top: int) -> tuple[LayerError, ...]:
    """Parse layer_statistics_dump CSV, compute rmse/scale = sqrt(mean_squared_error)/scale, keep the worst."""
    rows = []
    for row in csv.DictReader(io.StringIO(csv_text)):
        scale = float(row["scale"])
        if not scale > 0:
            continue
        rmse = math.sqrt(max(float(row["mean_squared_error"]), 0.0))
        rows.append(LayerError(row["op_name"], row["tensor_name"], rmse / scale, float(row["max_abs_error"]), scale))
    rows.sort(key=lambda e: e.rmse_over_scale, reverse=True)
    return tuple(rows[:top])
