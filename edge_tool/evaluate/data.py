"""Eval data through the calibration package (npz / npy / image folders / TFRecord / CSV), labels normalised.

``EvalStream`` is what ``run_eval`` uses: batches straight from disk (memory O(batch)), with the labels (small)
loaded up front and per-input statistics accumulated as the batches pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from edge_tool import calibration
from edge_tool.calibration.dataset import class_counts
from edge_tool.calibration.spec import TensorSpec
from edge_tool.errors import DataError

STATS_CHUNK = 1 << 18  # elements per float64 chunk of RunningStats (2 MB: stays in cache)


class RunningStats:
    """min / max / mean / std of one input over every batch (Chan's parallel update, float64)."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0
        self.min, self.max = float("inf"), float("-inf")
        self.dtype, self.sample_shape = "", ()

    def update(self, arr: np.ndarray) -> None:
        """Fold one batch (already cast to the model dtype) in.

        The batch's own mean is a float64 sum; its squared deviations are summed in float64 chunks of
        ``STATS_CHUNK`` elements, so no float64 copy of the whole batch is made (faster on image batches:
        docs/performance.md, "Defaults").
        """
        self.dtype, self.sample_shape = arr.dtype.name, tuple(int(d) for d in arr.shape[1:])
        if arr.size == 0:
            return
        if arr.dtype.kind in "US":  # text (a string input): the statistics of its lengths in characters
            self.dtype, arr = "string", np.char.str_len(arr)
        flat = arr.reshape(-1)
        n_b = flat.size
        mean_b = float(flat.sum(dtype=np.float64)) / n_b
        m2_b = 0.0
        for start in range(0, n_b, STATS_CHUNK):
            d = flat[start : start + STATS_CHUNK].astype(np.float64) - mean_b
            m2_b += float(np.einsum("i,i->", d, d))  # not np.dot: BLAS threads would spin beside TensorFlow
        delta, total = mean_b - self.mean, self.n + n_b
        self.mean += delta * n_b / total
        self.m2 += m2_b + delta * delta * self.n * n_b / total
        self.n = total
        self.min, self.max = min(self.min, float(flat.min())), max(self.max, float(flat.max()))

    def to_dict(self, n_samples: int) -> dict:
        """The InputStats dict calibration's summary has (shape with the sample count first)."""
        nan = float("nan")
        empty = self.n == 0
        return {
            "dtype": self.dtype,
            "shape": [n_samples, *self.sample_shape],
            "min": nan if empty else self.min,
            "max": nan if empty else self.max,
            "mean": nan if empty else self.mean,
            "std": nan if empty else float(np.sqrt(self.m2 / self.n)),
        }


class EvalStream:
    """Eval data opened for streaming: count, labels and summary line up front; ``batches()`` yields
    (inputs by signature name, labels or None), ``batch_size`` samples at a time (the last may be shorter).

    Image files are read through the input contract ``images`` (calibration.contract), and ``class_map`` (class
    names, path) → (index array or None, note) maps an image folder's classes onto the model's outputs.
    Nothing but the current batch is held, except ``keep_first`` samples kept aside for the per-layer debugger
    (a bounded sample: the first ``keep_first`` samples in data order). Data problems (shape, dtype, NaN/Inf)
    raise DataError when the batch holding them is reached, naming its sample range.
    """

    def __init__(
        self,
        path: Path,
        specs: list[TensorSpec],
        seed: int = 0,
        batch_size: int = 64,
        keep_first: int = 0,
        images: tuple = (),
        class_map=None,
    ):
        self.path = Path(path)
        self._options = calibration.LoadOptions(
            samples=None, seed=seed, require_labels=False, keep_label_shape=True, images=images, text=True
        )
        self._source = calibration.SourceStream(self.path, specs, self._options, batch_size)
        self.count = len(self._source)
        self.labels = _normalise_labels(self._source.labels, self.count, self.path)
        self.label_note = ""
        if class_map is not None and self.labels is not None and self._source.class_names is not None:
            # image-folder classes onto the model's output indices (by name when the model has labels)
            index, self.label_note = class_map(tuple(self._source.class_names), self.path)
            if index is not None:
                self.labels = index[self.labels]
        self.keep_first = keep_first
        self.kept: dict[str, list[np.ndarray]] = {}
        self._stats = {s.name: RunningStats() for s in self._source.specs}
        self.consumed = 0

    @property
    def summary(self) -> str:
        """One line: file, format, sample count, labelled or not."""
        return (
            f"{self.path.name} ({self._source.format}): {self.count} samples, "
            f"{'labelled' if self.labels is not None else 'no labels'}"
        )

    @property
    def warnings(self) -> tuple[str, ...]:
        """Warnings so far (complete once every batch was read)."""
        return tuple(self._source.warnings)

    def batches(self) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray | None]]:
        """Stream (inputs, labels) batches; updates statistics and the kept sample on the way."""
        for inputs, _ in self._source:
            n = len(next(iter(inputs.values())))
            for name, arr in inputs.items():
                self._stats[name].update(arr)
                if self.consumed < self.keep_first:
                    self.kept.setdefault(name, []).append(arr[: self.keep_first - self.consumed].copy())
            labels = None if self.labels is None else self.labels[self.consumed : self.consumed + n]
            self.consumed += n
            yield inputs, labels

    def kept_inputs(self) -> dict[str, np.ndarray]:
        """The first ``keep_first`` samples seen (by input name)."""
        return {k: np.concatenate(v) for k, v in self.kept.items()}

    def details(self) -> dict:
        """The calibration-style summary dict (inputs' statistics over every batch read)."""
        src = self._source
        return {
            "source": str(src.path),
            "format": src.format,
            "n_available": src.n_available,
            "n_selected": src.n_selected,
            "sampling": src.sampling,
            "seed": self._options.seed,
            "samples_requested": None,
            "inputs": {k: st.to_dict(self.consumed) for k, st in self._stats.items()},
            "class_names": list(src.class_names) if src.class_names is not None else None,
            "class_counts": class_counts(src.labels if np.ndim(src.labels) == 1 else None, src.class_names),
            "warnings": list(self.warnings),
        }


def _normalise_labels(labels, n: int, path: Path) -> np.ndarray | None:
    """The labels as stored (one row per sample, numeric); what they must hold is the task's to check
    (``edge_tool.tasks``), once the reference's outputs are known."""
    if labels is None:
        return None
    labels = np.asarray(labels)
    if labels.ndim == 0 or len(labels) != n:
        raise DataError(
            f"--data {path}: y has {len(labels) if labels.ndim else 0} labels for {n} samples; expected "
            "one label per sample."
        )
    if labels.dtype.kind not in "iufb":
        raise DataError(
            f"--data {path}: labels hold {labels.dtype} values; expected numbers (class indices, one-hot "
            "or multi-hot rows, masks or regression targets)."
        )
    return labels
