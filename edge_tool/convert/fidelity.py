"""Does a float .tflite compute what the SavedModel computes? Checked on seeded probe inputs as each is written.

fp32 and fp16 files should match the SavedModel up to float rounding, yet TensorFlow's converter and
kernels can silently disagree (a GRU lowered to a ``WHILE`` loop after a Bidirectional LSTM ran up to 0.40 off).
So ``convert`` feeds a few seeded random inputs to the SavedModel (TensorFlow) and to the new file (LiteRT, in the
smoke-test child, state reset before each input), and warns — recording the figures in manifest.json's
``artifacts[].self_check`` — when they differ by more than float rounding explains. Quantized modes are measured
by ``edgetool eval`` on real data instead: their error is expected and data-dependent.
"""

from __future__ import annotations

import numpy as np

from edge_tool.convert.modes import MODES
from edge_tool.models.signatures import SignatureInfo
from edge_tool.schemas.records import SelfCheck  # the manifest's artifacts[].self_check record

PROBES = 4  # seeded random input batches per check


def tolerance(mode: str) -> float | None:
    """Max |tflite - SavedModel| a ``mode`` file may show, relative to max(1, max |SavedModel output|)
    (``ModeSpec.self_check_tolerance``); None for a mode whose files are not self-checked (quantized ones)."""
    return MODES[mode].self_check_tolerance


def probe_feeds(info: SignatureInfo, seed: int = 0) -> list[dict] | None:
    """Seeded random feeds ``{input name: array}`` for the signature, or None when a shape or dtype rules it out
    (an unknown non-batch dimension, a string input)."""
    rng = np.random.default_rng(seed)
    shapes = {}
    for t in info.inputs:
        if t.shape is None or len(t.shape) == 0 or any(d is None for d in t.shape[1:]):
            return None
        try:
            dtype = np.dtype(t.dtype)
        except TypeError:
            return None  # string, resource, bfloat16 ...: no meaningful random probe
        if dtype.kind not in "fiub":
            return None
        shapes[t.name] = ([t.shape[0] or 1, *t.shape[1:]], dtype)
    return [{name: _random(rng, shape, dtype) for name, (shape, dtype) in shapes.items()} for _ in range(PROBES)]


def _random(rng, shape: list, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return rng.uniform(0, 1, shape).astype(dtype)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(dtype)
    return np.zeros(shape, dtype)  # 0 is a valid id for embeddings and lookups, and False for a bool


def check(ctx, mode: str, probes: list[dict], got: list[dict]) -> SelfCheck | None:
    """Compare the .tflite's outputs ``got`` on ``probes`` with the SavedModel's (``ctx.reference_outputs``); None
    when the SavedModel itself refuses the random probes (an assertion on its input range, say)."""
    try:
        want = ctx.reference_outputs(probes)
    except (ValueError, TypeError, RuntimeError, ctx.tf.errors.OpError):
        return None
    return compare(mode, want, got)


def compare(mode: str, want: list[dict], got: list[dict]) -> SelfCheck | None:
    """Compare the SavedModel's outputs ``want`` with the .tflite's ``got`` (same probes, by output name); None
    when no output can be matched by name and shape."""
    errors, scale = [], 1.0
    for w, g in zip(want, got):
        for name, ref in w.items():
            out = g.get(name)
            if out is None or np.shape(out) != np.shape(ref) or not np.issubdtype(np.asarray(ref).dtype, np.floating):
                continue  # integer outputs (an argmax, ids) flip on near-ties: float rounding is not a drift there
            ref, out = np.asarray(ref, np.float64), np.asarray(out, np.float64)
            if not np.isfinite(ref).all():
                continue  # the model itself overflows on random inputs: nothing to compare
            scale = max(scale, float(np.abs(ref).max(initial=0.0)))
            diff = np.abs(out - ref)
            errors.append(float(diff.max(initial=0.0)) if np.isfinite(out).all() else float("inf"))
    if not errors:
        return None
    allowed = tolerance(mode) * scale
    worst = max(errors)
    return SelfCheck(len(want), worst, allowed, worst <= allowed)
