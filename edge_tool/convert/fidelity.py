"""Does a float .tflite compute what the SavedModel computes? Checked on seeded probe inputs as each is written.

fp32 and fp16 files should match the SavedModel up to float rounding, yet TensorFlow's converter and
kernels can silently disagree (a GRU lowered to a ``WHILE`` loop after a Bidirectional LSTM ran up to 0.40 off).
So ``convert`` feeds a few seeded random inputs to the SavedModel (TensorFlow) and to the new file (LiteRT, in the
smoke-test child, variable tensors reset before each input; a file with resource-variable state — Keras
``stateful=True`` — runs the inputs as one stream in a fresh interpreter, against a freshly loaded SavedModel, call by
call), and warns — recording the figures in manifest.json's
``artifacts[].self_check`` — when they differ by more than float rounding explains. Quantized modes are measured
by ``edgetool eval`` on real data instead: their error is expected and data-dependent.
"""

from __future__ import annotations

from dataclasses import replace

from edge_tool.convert.modes import MODES
from edge_tool.models.probes import agreement
from edge_tool.schemas.records import STREAM_INPUTS, SelfCheck  # the manifest's artifacts[].self_check record

# why a quantized file has no self_check (manifest.json's artifacts[].self_check_skipped)
QUANTIZED_SKIP = "a quantized file's error is expected and data-dependent: edgetool eval measures it on real data"


def tolerance(mode: str) -> float | None:
    """Max |tflite - SavedModel| a ``mode`` file may show, relative to max(1, max |SavedModel output|)
    (``ModeSpec.self_check_tolerance``); None for a mode whose files are not self-checked (quantized ones)."""
    return MODES[mode].self_check_tolerance


def check(ctx, mode: str, probes: list[dict], got: list[dict], stream: bool = False) -> SelfCheck | None:
    """Compare the .tflite's outputs ``got`` on ``probes`` with the SavedModel's (``ctx.reference_outputs``; with
    ``stream``, a model with state: ``ctx.stream_outputs``, the probes as one stream of calls from a freshly loaded
    SavedModel, as ``got`` came from a fresh interpreter); None when the SavedModel itself refuses the random probes
    (an assertion on its input range, say)."""
    try:
        want = ctx.stream_outputs(probes) if stream else ctx.reference_outputs(probes)
    except (ValueError, TypeError, RuntimeError, ctx.tf.errors.OpError):
        return None
    result = compare(mode, want, got)
    return replace(result, inputs=STREAM_INPUTS) if stream and result is not None else result


def compare(mode: str, want: list[dict], got: list[dict]) -> SelfCheck | None:
    """Compare the SavedModel's outputs ``want`` with the .tflite's ``got`` (same probes, by output name) within
    ``mode``'s tolerance; None when no output can be matched by name and shape."""
    return agreement(want, got, tolerance(mode))
