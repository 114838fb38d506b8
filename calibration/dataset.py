"""The loaded result: cast input arrays, labels, a JSON-friendly summary, batching and the TFLite generator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .serial import Record
from .spec import TensorSpec


@dataclass(frozen=True)
class InputStats(Record):
    """Per-input statistics of the selected samples (after casting)."""

    dtype: str
    shape: tuple
    min: float
    max: float
    mean: float
    std: float

    @classmethod
    def of(cls, arr: np.ndarray) -> InputStats:
        """Compute the statistics of one cast input array (float64 accumulation)."""
        dtype = arr.dtype.name
        if arr.dtype.kind in "USO":  # text (a string input): the statistics of its lengths in characters, as eval's
            dtype, arr = "string", np.char.str_len(arr.astype(str))
        if arr.size == 0:
            return cls(dtype, tuple(arr.shape), float("nan"), float("nan"), float("nan"), float("nan"))
        a = arr.astype(np.float64, copy=False)
        return cls(
            dtype, tuple(int(d) for d in arr.shape), float(a.min()), float(a.max()), float(a.mean()), float(a.std())
        )


@dataclass(frozen=True)
class CalibrationSummary(Record):
    """Where the data came from and what was selected; ``to_dict`` goes into manifest.json."""

    source: str
    format: str
    n_available: int
    n_selected: int
    sampling: str  # "all", "first", "random" or "stratified" (the mode actually used)
    seed: int
    samples_requested: int | None
    inputs: dict[str, InputStats]
    class_names: tuple[str, ...] | None = None
    class_counts: dict[str, int] | None = None  # per label value (class name when known) in the selection
    warnings: tuple[str, ...] = field(default_factory=tuple)


def class_counts(labels: np.ndarray | None, names: tuple[str, ...] | None) -> dict[str, int] | None:
    """Count selected samples per class (keys are class names when known, else the label values)."""
    if labels is None or labels.dtype.kind not in "iu":
        return None
    values, counts = np.unique(labels, return_counts=True)

    def key(v: int) -> str:
        return names[v] if names is not None and 0 <= v < len(names) else str(v)

    return {key(int(v)): int(c) for v, c in zip(values, counts)}


@dataclass(frozen=True, eq=False)
class Dataset:
    """Calibration / eval samples matched to the model inputs: arrays already cast to the spec dtypes."""

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    summary: CalibrationSummary
    warnings: tuple[str, ...]
    specs: tuple[TensorSpec, ...] = ()
    class_names: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return self.summary.n_selected

    def batches(self, batch_size: int = 1) -> Iterator[dict[str, np.ndarray]]:
        """Yield {input name: array} slices of ``batch_size`` samples (the last one may be shorter)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for start in range(0, len(self), batch_size):
            yield {k: v[start : start + batch_size] for k, v in self.inputs.items()}

    def representative_dataset(self) -> Callable[[], Iterator[dict[str, np.ndarray]]]:
        """A generator function for ``TFLiteConverter.representative_dataset``: one sample per step, as
        ``{input name: array with batch dim 1 and the spec dtype}``.

        Samples are keyed by signature input name because the converter's calibrator matches dicts to the
        model's signature by name, whereas a list would be fed by tensor position, and TFLite does not keep
        the signature's input order (multi-input models would get their inputs swapped).
        """
        names = [s.name for s in self.specs] or list(self.inputs)

        def gen() -> Iterator[dict[str, np.ndarray]]:
            for i in range(len(self)):
                yield {name: self.inputs[name][i : i + 1] for name in names}

        return gen
