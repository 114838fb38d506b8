"""Eval data through the calibration package (npz / npy / image folders / TFRecord / CSV), labels normalised."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError


@dataclass(frozen=True)
class InputSpec:
    """What one model input takes: signature name, numpy dtype name, shape (None for free dims)."""

    name: str
    dtype: str
    shape: tuple


@dataclass(frozen=True)
class EvalData:
    """Every eval sample: inputs by signature name (batch first), optional integer labels, a summary line."""

    inputs: dict
    labels: np.ndarray | None
    summary: str
    warnings: tuple[str, ...] = field(default_factory=tuple)
    details: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Number of samples."""
        return len(next(iter(self.inputs.values())))


def load_eval_data(path: Path, specs: list[InputSpec], seed: int = 0) -> EvalData:
    """Load every sample of ``path`` for a model with inputs ``specs``.

    calibration.load checks structure, shapes and dtypes (DataError naming expected and found) and casts the
    arrays to the spec dtypes; labels (``y``) are optional and become integer class indices.
    """
    import calibration  # noqa: PLC0415

    path = Path(path)
    cspecs = [calibration.InputSpec(s.name, s.dtype, tuple(s.shape)) for s in specs]
    ds = calibration.load(path, cspecs, calibration.LoadOptions(samples=None, seed=seed, require_labels=False))
    summary = ds.summary
    labels = _normalise_labels(ds.labels, summary.n_selected, path)
    line = f"{path.name} ({summary.format}): {summary.n_selected} samples, {'labelled' if labels is not None else 'no labels'}"
    return EvalData(dict(ds.inputs), labels, line, tuple(ds.warnings), summary.to_dict())


def _normalise_labels(labels, n: int, path: Path) -> np.ndarray | None:
    if labels is None:
        return None
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] > 1:
        labels = labels.argmax(axis=1)
    labels = labels.reshape(-1)
    if len(labels) != n:
        raise DataError(f"--data {path}: y has {len(labels)} labels for {n} samples; expected one label per sample.")
    if labels.dtype.kind not in "iuf" or (labels.dtype.kind == "f" and not np.all(labels == np.round(labels))):
        raise DataError(f"--data {path}: y holds {labels.dtype} values; expected integer class indices (or one-hot rows).")
    return labels.astype(np.int64)
