"""edgetool's one use of tf.lite.experimental.QuantizationDebugger: calibrate for int8, rank layers by error.

The debugger compares each quantized tensor with its float counterpart, so it needs the float model: it gets a
converter set up by ``recipes.configure_full_int8`` and calibration samples fed by name. Two callers:

- ``edgetool eval --per-layer`` (``worst_layers``) rebuilds an int8 model of the reference SavedModel on the
  first MAX_DEBUG_SAMPLES eval samples (in data order; the streaming eval pass keeps them aside). The figures
  describe an int8 quantization of the reference on the eval data, which matches the artefact when the artefact
  was made the same way (same calibration data gives identical scales; other calibration data, similar ones).
- ``convert --quant auto``'s selective int8 (``convert.selective``) keeps the debugger to re-quantize with the
  worst layers left in float (``float_fallback``).

Layers are ranked by rmse/scale (the debugger's standard measure: ~0.29 is ideal rounding).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.calibration.serial import Record, spec
from edge_tool.core.env import import_tf
from edge_tool.litert.feeding import input_order, samples_by_name
from edge_tool.litert.recipes import configure_full_int8
from edge_tool.models.signatures import SERVING
from edge_tool.tflite_converter.run import Refusal, edgetool_callback, new_converter, run_converter

MAX_DEBUG_SAMPLES = 100  # samples the per-layer debugger sees (the first ones of --data)


@dataclass(frozen=True)
class LayerError(Record):
    """One layer's quantization error from the QuantizationDebugger (rmse/scale: ~0.29 is ideal rounding)."""

    op_name: str = field(metadata=spec("op"))
    tensor_name: str = field(metadata=spec("tensor"))
    rmse_over_scale: float
    max_abs_error: float
    scale: float


@contextlib.contextmanager
def quiet_debugger() -> Iterator[None]:
    """Hide the debugger's prints and the deprecation warning of the tf.lite.Interpreter it runs inside."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def calibrate_and_rank(
    tf,
    converter,
    inputs: Mapping[str, np.ndarray],
    refusal: Refusal,
    *,
    limit: int | None = None,
    float_fallback: bool = False,
):
    """(debugger, every quantized layer worst first) for ``tflite_converter`` (from ``new_converter``) made full int8.

    ``inputs`` (``{input name: samples}``, the first ``limit``) serve both as calibration and as the debugger's
    comparison data. The debugger converts through ``run_converter``: a failure is the ConversionError ``refusal``
    words.
    """
    configure_full_int8(tf, converter, samples_by_name(inputs, limit), float_fallback=float_fallback)

    def debug(conv):
        dump = io.StringIO()
        with quiet_debugger():
            debugger = _debugger(tf, conv, inputs, limit)
            debugger.run()
        debugger.layer_statistics_dump(dump)
        return debugger, dump.getvalue()

    debugger, stats = run_converter(converter, refusal, debug)
    return debugger, rank_layers(stats, top=None)


def _debugger(tf, converter, inputs: Mapping[str, np.ndarray], limit: int | None):
    """A QuantizationDebugger on ``tflite_converter`` (calibrated by name) fed ``inputs``.

    The debugger's own comparison data (fed by tensor position only) is put in the input-tensor order of the debug
    model it built.
    """
    holder = {}

    def debug_dataset() -> Iterator[list]:
        order = input_order(holder["debugger"].quant_model, list(inputs))
        for sample in samples_by_name(inputs, limit)():
            yield [sample[name] for name in order]

    holder["debugger"] = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=edgetool_callback(debug_dataset)
    )
    return holder["debugger"]


def worst_layers(
    saved_model: Path, inputs: dict, input_order: list[str], top: int, signature: str = SERVING
) -> tuple[LayerError, ...]:
    """The ``top`` layers of an int8 quantization of ``saved_model``'s ``signature`` with the largest rmse/scale.

    ``inputs`` maps input names to samples in their own dtypes; the ``input_order`` names are fed, by name.
    """
    tf = import_tf()
    refusal = Refusal(
        saved_model,
        f"The quantization debugger could not rebuild an int8 model of {saved_model}",
        builtin_only="--per-layer rebuilds the reference as a builtin-only int8 model, so it cannot "
        "rank this one's layers: run eval without --per-layer.",
        loop="--per-layer ranks layers of a calibrated int8 model: run eval without --per-layer.",
    )
    _, ranking = calibrate_and_rank(
        tf,
        new_converter(saved_model, signature=signature),
        {name: inputs[name] for name in input_order},
        refusal,
        limit=MAX_DEBUG_SAMPLES,
    )
    return ranking[:top]


def rank_layers(csv_text: str, top: int | None) -> tuple[LayerError, ...]:
    """Parse layer_statistics_dump CSV, compute rmse/scale = sqrt(mean_squared_error)/scale, keep the worst ``top``."""
    rows = []
    for row in csv.DictReader(io.StringIO(csv_text)):
        scale = float(row["scale"])
        if not scale > 0:
            continue
        rmse = math.sqrt(max(float(row["mean_squared_error"]), 0.0))
        rows.append(LayerError(row["op_name"], row["tensor_name"], rmse / scale, float(row["max_abs_error"]), scale))
    rows.sort(key=lambda e: e.rmse_over_scale, reverse=True)
    return tuple(rows[:top])
