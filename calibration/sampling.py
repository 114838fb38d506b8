"""Seeded sample selection: first N, uniform random, or stratified by class (proportional, every class once)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .types import LoadOptions, Sampling
from .validate import is_classlike


@dataclass
class Selection:
    """Indices to read (sorted, source order) or None for everything, and the mode actually used."""

    indices: np.ndarray | None
    sampling: str
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def count(self, n_available: int) -> int:
        """How many samples the selection yields."""
        return n_available if self.indices is None else len(self.indices)


def stratified_counts(class_sizes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """How many to take per class: proportional (largest remainder), >= 1 each when k >= #classes.

    Ties are broken by a seeded random order so that no class is favoured by its position.
    """
    sizes = np.asarray(class_sizes, dtype=np.int64)
    quota = k * sizes / sizes.sum()
    take = np.floor(quota).astype(np.int64)
    if k >= len(sizes):
        take = np.maximum(take, 1)
    take = np.minimum(take, sizes)
    tie = rng.permutation(len(sizes))
    while take.sum() > k:  # only after the ">= 1" bump: take back from the most over-served class
        over = np.where(take > 1, take - quota, -np.inf)
        take[max(range(len(sizes)), key=lambda i: (over[i], -tie[i]))] -= 1
    while take.sum() < k:
        gap = np.where(take < sizes, quota - take, -np.inf)
        take[max(range(len(sizes)), key=lambda i: (gap[i], -tie[i]))] += 1
    return take


def _stratified(labels: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    classes, inverse = np.unique(labels, return_inverse=True)
    sizes = np.bincount(inverse, minlength=len(classes))
    take = stratified_counts(sizes, k, rng)
    picked = [rng.choice(np.flatnonzero(inverse == c), size=int(t), replace=False) for c, t in enumerate(take) if t]
    return np.sort(np.concatenate(picked))


def select(n_available: int, labels: np.ndarray | None, options: LoadOptions) -> Selection:
    """Choose which samples to use. Deterministic for a given seed; indices come back in source order."""
    mode = options.sampling
    problems = []
    if mode is Sampling.STRATIFIED and not is_classlike(labels):
        problems.append(
            "sampling 'stratified' needs class labels, but the source has "
            + ("none" if labels is None else "non-class labels")
            + "; use 'random' or add labels"
        )
    if mode is Sampling.AUTO:
        mode = Sampling.STRATIFIED if is_classlike(labels) else Sampling.RANDOM
    k = options.samples
    if k is None:
        return Selection(None, "all", problems=problems)
    if k >= n_available:
        warnings = []
        if k > n_available:
            warnings.append(f"asked for {k} samples, source has {n_available}; using all {n_available}")
        return Selection(None, "all", warnings, problems)
    rng = np.random.default_rng(options.seed)
    if mode is Sampling.FIRST:
        idx = np.arange(k)
    elif mode is Sampling.STRATIFIED and not problems:
        idx = _stratified(labels, k, rng)
    else:
        idx = np.sort(rng.choice(n_available, size=k, replace=False))
    return Selection(idx.astype(np.int64), mode.value, problems=problems)
