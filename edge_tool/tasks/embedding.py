"""Embeddings (metric learning): one L2-normalised vector per sample, compared by cosine similarity.

Drift is the cosine similarity of each artefact embedding to the reference's embedding of the same sample (mean and
worst). The task metric is retrieval recall@1 over the evaluated set, labels giving identities: each sample is a
query against every other sample (the gallery); it is a hit when its nearest neighbour by cosine has its identity.
Queries whose identity has no other sample cannot hit and are left out (``queries`` says how many counted). Recall
needs every embedding at once, so this accumulator keeps them (float32, at most ``MAX_GALLERY`` samples: the first
ones; ``gallery`` says how many).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.tasks.base import Accumulator, Task, TaskContext, label_error, per_sample, shape_text, whole
from edge_tool.tasks.registry import TASKS

MAX_GALLERY = 20_000
UNIT_NORM_TOLERANCE = 1e-3
_CHUNK = 1024


def unit_rows(out: np.ndarray) -> bool:
    """True when every row of (n, d>=2) ``out`` has L2 norm 1 (within 1e-3) and the rows are not probability
    distributions (a confident softmax's near one-hot rows also have norm ~1)."""
    flat = per_sample(out)
    if flat.shape[1] < 2 or not len(flat) or not np.all(np.isfinite(flat)):
        return False
    norms = np.linalg.norm(flat, axis=1)
    if not np.all(np.abs(norms - 1.0) <= UNIT_NORM_TOLERANCE):
        return False
    return not (flat.min() >= 0 and np.allclose(flat.sum(axis=1), 1.0, atol=1e-3))


def normalised(a: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    flat = per_sample(a)
    norms = np.linalg.norm(flat, axis=1, keepdims=True)
    return flat / np.where(norms > 0, norms, 1.0)


def recall_at_1(emb: np.ndarray, ids: np.ndarray) -> tuple[float | None, int]:
    """(leave-one-out recall@1 by cosine, number of queries counted): only queries whose identity occurs twice."""
    e, ids = normalised(emb).astype(np.float32), np.asarray(ids).reshape(-1)
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    counted = counts[inverse] > 1
    hits = 0
    for start in range(0, len(e), _CHUNK):
        sim = e[start : start + _CHUNK] @ e.T
        rows = np.arange(sim.shape[0])
        sim[rows, start + rows] = -np.inf  # never your own neighbour
        nearest = sim.argmax(axis=1)
        hit = ids[nearest] == ids[start : start + _CHUNK]
        hits += int(np.sum(hit & counted[start : start + _CHUNK]))
    queries = int(counted.sum())
    return (hits / queries if queries else None), queries


class _Cosine(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.sum, self.min, self.n = ctx, 0.0, None, 0

    def update(self, ref, out, labels) -> None:
        """Fold the per-sample cosine of artefact and reference embeddings in."""
        a, b = normalised(out[self.ctx.primary]), normalised(ref[self.ctx.primary])
        cos = np.sum(a * b, axis=1)
        if not len(cos):
            return
        self.sum += float(cos.sum())
        self.n += len(cos)
        self.min = float(cos.min()) if self.min is None else min(self.min, float(cos.min()))

    def result(self) -> dict:
        """mean_cosine and min_cosine to the reference's embedding of the same sample."""
        return {"mean_cosine": self.sum / self.n if self.n else None, "min_cosine": self.min}


class _Recall(Accumulator):
    def __init__(self, ctx: TaskContext):
        self.ctx, self.emb, self.ids, self.kept = ctx, [], [], 0

    def update(self, ref, out, labels) -> None:
        """Keep the batch's embeddings and identities (up to MAX_GALLERY samples)."""
        room = MAX_GALLERY - self.kept
        if room <= 0:
            return
        e = per_sample(out[self.ctx.primary])[:room].astype(np.float32)
        self.emb.append(e)
        self.ids.append(np.asarray(labels).reshape(-1)[:room])
        self.kept += len(e)

    def result(self) -> dict:
        """recall_at_1, queries (counted) and gallery (samples searched)."""
        if not self.kept:
            return {"recall_at_1": None, "queries": None, "gallery": None}
        recall, queries = recall_at_1(np.concatenate(self.emb), np.concatenate(self.ids))
        return {"recall_at_1": recall, "queries": queries, "gallery": self.kept}


class Embedding(Task):
    """L2-normalised vectors; ``--max-drop`` gates retrieval recall@1 (absolute: 0.02 = 2 points)."""

    name = "embedding"
    qat_head = True
    value_outputs = True
    main_metric = "recall_at_1"
    metric_keys = ("recall_at_1", "queries", "gallery")
    drift_keys = ("mean_cosine", "min_cosine")
    percent = frozenset({"recall_at_1"})
    agreement_label = "cosine to ref"

    def labels(self, labels: np.ndarray, ref: dict, ctx: TaskContext, data: Path) -> np.ndarray:
        """One identity per sample (n,) or (n, 1): whole numbers or strings."""
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise label_error(
                data,
                f"have shape {shape_text(labels)}",
                f"embedding output {ctx.primary!r} is compared by retrieval, so y must hold one identity per "
                "sample (n,)",
            )
        if labels.dtype.kind in "USO":
            return np.unique(labels.astype(str), return_inverse=True)[1].astype(np.int64)
        if not whole(labels):
            raise label_error(
                data, f"hold non-integer values ({labels.dtype})", "embedding labels must be identities (integers)"
            )
        return labels.astype(np.int64)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Cosine similarity to the reference's embedding of the same sample."""
        return _Cosine(ctx)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """Retrieval recall@1 with the labels as identities."""
        return _Recall(ctx)

    def agreement(self, drift: dict) -> float | None:
        """Mean cosine similarity to the reference."""
        return drift["mean_cosine"]


TASK = TASKS.register(Embedding())
