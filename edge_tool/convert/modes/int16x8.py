"""int16x8: 16-bit activations with 8-bit weights, for models int8 activations hurt.

TFLite has no 16x8 kernel for some ops (CAST, HARD_SWISH, …); the strict conversion then fails. As TensorFlow's
16x8 guide recommends, those ops are then kept in float (TFLITE_BUILTINS added to the op sets): everything else
stays 16x8, the ops kept in float are named on the terminal and in the manifest.
"""

from __future__ import annotations

import itertools
import re

from edge_tool.convert.registry import MODES, ModeSpec
from edge_tool.convert.smoke import litert_problem, run_in_litert
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError
from edge_tool.schemas.records import Int16x8Note

# max |file - SavedModel| / max(1, |SavedModel|) on calibration samples for a float-fallback file: working int16x8
# files measured 0.004-0.02; a GroupNormalization model whose SELECT_V2 fell back to float measured 0.92
FALLBACK_MAX_DRIFT = 0.2
FALLBACK_SAMPLES = 8
_NO_16X8_KERNEL = re.compile(r"16x8-bit not yet supported for op: '([A-Za-z0-9_]+)'")


def build(ctx) -> bytes:
    """EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8; ops without a 16x8 kernel fall back to float."""
    try:
        return ctx.convert(lambda conv: _configure(ctx, conv, float_fallback=False))
    except ConversionError as exc:
        missing = _NO_16X8_KERNEL.findall(str(exc))
        if not missing:
            _refuse_integer_range(ctx, exc)
            raise
    data = ctx.convert(lambda conv: _configure(ctx, conv, float_fallback=True))
    if (why := litert_problem(data)) is not None:
        raise ConversionError(
            f"--quant int16x8: TFLite has no 16x8 kernel for {', '.join(missing)}, and the model with those ops "
            f"kept in float does not run in LiteRT either ({why}). Use --quant int8, dynamic or fp16 for this model."
        )
    drift = fallback_drift(ctx, data)
    if drift is not None and drift[0] > FALLBACK_MAX_DRIFT:
        raise ConversionError(
            f"--quant int16x8: TFLite has no 16x8 kernel for {', '.join(missing)}; with those ops kept in float the "
            f"file runs but does not compute the model: on {drift[1]} calibration samples its outputs differ from "
            f"the SavedModel's by up to {drift[0]:.2f} of their scale (int16x8 files that work stay within "
            f"{FALLBACK_MAX_DRIFT}). Use --quant int8, dynamic or fp16 for this model."
        )
    notes = Int16x8Note(
        tuple(float_ops(data)),
        f"TFLite has no 16x8 kernel for {', '.join(missing)}; the ops listed run in float between "
        "quantize/dequantize ops, everything else is 16x8",
    )
    ctx.record_notes("int16x8", notes)
    _report(notes)
    return data


def _refuse_integer_range(ctx, exc: ConversionError) -> None:
    """The 16x8 quantizer asking for the calibrated range of an integer input (token ids that also feed a padding
    mask's NOT_EQUAL: ``Embedding(mask_zero=True)``): say what that is and what converts instead."""
    found = _NO_RANGE.search(str(exc))
    names = {
        f"serving_default_{t.name}:0": t for t in ctx.source.signature.inputs if t.dtype.startswith(("int", "uint"))
    }
    tensor = names.get(found.group(1)) if found else None
    if tensor is None:
        return
    raise ConversionError(
        f"--quant int16x8 cannot quantize {ctx.source.original}: TensorFlow's 16x8 quantizer asks for a calibrated "
        f"float range of the {tensor.dtype} input {tensor.name!r}, which calibration never records (it is not a "
        "float tensor): the input feeds an op the 16x8 scheme quantizes, such as the NOT_EQUAL that builds the "
        "padding mask of Embedding(mask_zero=True) or Masking. The raw TFLiteConverter fails the same way. Use "
        "--quant int8 (full-integer; the token ids stay int32), dynamic or fp16 for this model."
    ) from exc


_NO_RANGE = re.compile(
    r"Max and min for dynamic tensors should be recorded during calibration: Failed for tensor (\S+?:\d+)"
)


def fallback_drift(ctx, data: bytes) -> tuple[float, int] | None:
    """(worst output difference of ``data`` from the SavedModel relative to the output's scale, samples) on the first
    calibration samples, or None when either side cannot be run on them."""
    import numpy as np  # noqa: PLC0415

    if ctx.representative_dataset is None:
        return None
    feeds = [dict(f) for f in itertools.islice(ctx.representative_dataset(), FALLBACK_SAMPLES)]
    _, got = run_in_litert(data, feeds)
    try:
        want = ctx.reference_outputs(feeds)
    except (ValueError, TypeError, RuntimeError, ctx.tf.errors.OpError):
        return None
    worst = None
    for w, g in zip(want, got or ()):
        for name, ref in w.items():
            out = g.get(name)
            if out is None or np.shape(out) != np.shape(ref) or np.asarray(ref).dtype.kind not in "biuf":
                continue  # string outputs (a label lookup) have no drift: eval compares them as strings
            ref, out = np.asarray(ref, np.float64), np.asarray(out, np.float64)
            err = float(np.abs(out - ref).max(initial=0.0)) / max(1.0, float(np.abs(ref).max(initial=0.0)))
            worst = max(worst or 0.0, err if np.isfinite(err) else float("inf"))
    return None if worst is None else (worst, len(feeds))


def _report(notes) -> None:
    console.print(
        f"[yellow]note:[/] int16x8 keeps {term(', '.join(notes.float_ops))} in float: "
        f"{term(notes.reason)} (manifest.json: artifacts[].int16x8). For an all-integer model use "
        "--quant int8."
    )


def _configure(ctx, conv, float_fallback: bool) -> None:
    tf = ctx.tf
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = ctx.representative_dataset
    conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    if float_fallback:
        conv.target_spec.supported_ops.append(tf.lite.OpsSet.TFLITE_BUILTINS)


def float_ops(data: bytes) -> list[str]:
    """Names of the ops (other than QUANTIZE/DEQUANTIZE) that compute on float32 activations, sorted."""
    from edge_tool.parsers.tflite_model import ops_on_dtype  # noqa: PLC0415

    return sorted(set(ops_on_dtype(data, "float32")) - {"QUANTIZE", "DEQUANTIZE"})


SPEC = MODES.register(
    ModeSpec(
        "int16x8",
        weights="int8",
        activations="int16",
        needs_calibration=True,
        build=build,
        tflite_recipe="int16x8",
        integer_rank=2,
    )
)
