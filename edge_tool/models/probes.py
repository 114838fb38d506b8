"""Seeded random probe inputs for a signature, and whether two runs of a model on them agree up to float rounding.

Shared by every writer that checks its own file against TensorFlow: convert's .tflite and ONNX self-checks
(``convert.fidelity``, tolerance by mode) and the TensorFlow.js writer's (``tfjs_writer.selfcheck``).
"""

from __future__ import annotations

import numpy as np

from edge_tool.models.signatures import SignatureInfo
from edge_tool.schemas.records import SelfCheck  # the manifest's artifacts[].self_check record

PROBES = 4  # seeded random input batches per check
STREAM_CALLS = 8  # calls in a stream-wise check (a model with state): long enough for the state to matter


def probe_feeds(info: SignatureInfo, seed: int = 0, count: int = PROBES) -> list[dict] | None:
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
    return [{name: _random(rng, shape, dtype) for name, (shape, dtype) in shapes.items()} for _ in range(count)]


def _random(rng, shape: list, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return rng.uniform(0, 1, shape).astype(dtype)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(dtype)
    return np.zeros(shape, dtype)  # 0 is a valid id for embeddings and lookups, and False for a bool


def agreement(want: list[dict], got: list[dict], tolerance: float) -> SelfCheck | None:
    """Compare TensorFlow's outputs ``want`` with the written file's ``got`` (same probes, by output name), allowing
    ``tolerance`` x max(1, max |want|); None when no output can be matched by name and shape."""
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
    allowed = tolerance * scale
    worst = max(errors)
    return SelfCheck(len(want), worst, allowed, worst <= allowed)
