"""The ranges of calibrated models fed on contiguous shards of one sample set, merged as one calibration would have.

TensorFlow's calibrator keeps, per tensor, a running ``std::min``/``std::max`` over every value it sees
(``calibration_logger.cc``: ``min_ = std::min(min_, v)``, NaN skipped) and writes the two floats into each tensor's
quantization parameters of the float model. A running min/max over samples in order equals the same fold over
contiguous shards' results taken in shard order (with ``std::min``'s keep-the-first-on-ties, so even -0.0 against 0.0
resolves as it would have): :func:`merge_ranges` does that fold on the models' bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from edge_tool.parsers.tflite_schema import tflite_schema


def merge_ranges(models: list[bytes]) -> bytes | None:
    """The first calibrated model with each tensor's min (max) folded over all models in order, keeping the first
    on ties as ``std::min`` (``std::max``) does; None unless the models are byte-equal outside those floats."""
    slots = [_range_slots(m) for m in models]
    if any(len(m) != len(models[0]) or s != slots[0] for m, s in zip(models, slots)):
        return None
    mins, maxs = slots[0]
    if not _equal_outside(models, sorted(mins + maxs)):
        return None
    out = bytearray(models[0])
    for pos in mins:
        _fold(out, models, pos, lambda new, cur: new < cur)
    for pos in maxs:
        _fold(out, models, pos, lambda new, cur: cur < new)
    return bytes(out)


def _fold(out: bytearray, models: list[bytes], pos: int, better: Callable) -> None:
    best = models[0][pos : pos + 4]
    for m in models[1:]:
        candidate = m[pos : pos + 4]
        if better(struct.unpack("<f", candidate)[0], struct.unpack("<f", best)[0]):
            best = candidate
    out[pos : pos + 4] = best


def _range_slots(data: bytes) -> tuple[list[int], list[int]]:
    """Byte offsets of every float of every tensor's quantization min and max vectors."""
    schema = tflite_schema()
    model = schema.Model.GetRootAs(data, 0)
    mins, maxs = [], []
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for t in range(graph.TensorsLength()):
            q = graph.Tensors(t).Quantization()
            if q is None:
                continue
            for field, length, slots in ((4, q.MinLength(), mins), (6, q.MaxLength(), maxs)):
                if length:
                    start = q._tab.Vector(q._tab.Offset(field))
                    slots.extend(start + 4 * j for j in range(length))
    return mins, maxs


def _equal_outside(models: list[bytes], slots: list[int]) -> bool:
    """True when every model equals the first outside the 4-byte ``slots``."""
    views = [memoryview(m) for m in models]
    edges = [0, *[p for s in slots for p in (s, s + 4)], len(models[0])]
    for lo, hi in zip(edges[0::2], edges[1::2]):
        if any(v[lo:hi] != views[0][lo:hi] for v in views[1:]):
            return False
    return True
