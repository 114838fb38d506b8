"""Entry points: ``load`` (whole selection in memory, every problem reported at once) and ``iter_source`` /
``SourceStream`` (batches streamed from disk for large eval sets; same selection, same casting)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .dataset import CalibrationSummary, Dataset, InputStats, class_counts
from .errors import CalibrationError
from .readers import Reader, reader_for
from .readers.base import reason
from .sampling import Selection, select
from .spec import TensorSpec, show_shape, validate_specs
from .types import LoadOptions
from .validate import match_input, normalize_labels

READ_BATCH = 1024

_LABEL_HINTS = {
    "npz": "add a 'y' array (or name it with label_key)",
    "npy": "a .npy file holds no labels; use an .npz with 'x' and 'y'",
    "csv": "name the label column with label_key",
    "tfrecord": "name the label feature with label_key",
    "image-folder": "put the images in one sub-folder per class",
}


@dataclass
class _Plan:
    """What the open/selection stage found: selection, all labels (normalized), problems, warnings."""

    reader: Reader
    n_available: int
    selection: Selection
    labels: np.ndarray | None  # labels of the selected samples, in order
    class_names: tuple[str, ...] | None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@contextmanager
def os_errors(path: Path) -> Iterator[None]:
    """Turn an operating-system failure while a source is read (permission, I/O error, file gone) into a
    CalibrationError naming the file; readers map their libraries' format errors themselves."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise CalibrationError(f"cannot read data {path}{where}: {exc.strerror or reason(exc)}") from None


def _guarded(path: Path, batches: Iterator) -> Iterator:
    with os_errors(path):
        yield from batches


def _header(path: Path, problems: list[str]) -> str:
    return f"data {path} cannot be used for this model ({len(problems)} problem{'s' if len(problems) != 1 else ''}):"


def _raise(path: Path, problems: list[str]) -> None:
    if problems:
        raise CalibrationError("\n".join([_header(path, problems), *(f"- {p}" for p in problems)]))


def _plan(source: str | Path, specs: Sequence[TensorSpec], options: LoadOptions) -> _Plan:
    path = Path(source).expanduser()
    specs = validate_specs(specs, options.text)
    with os_errors(path):
        reader = reader_for(path)(path, specs, options)
        problems, warnings = list(reader.problems), list(reader.warnings)
        n = reader.count()
        if n == 0 and not problems:
            problems.append(f"{path.name} holds no samples (empty data)")
        # labels of a source whose inputs are unreadable would only add a "0 samples" echo of the real problem
        raw_labels = None if problems and n == 0 else reader.labels()
    if raw_labels is not None and np.ndim(raw_labels) > 2 and not (options.require_labels or options.keep_label_shape):
        # masks or per-pixel targets: nothing here needs them (calibration samples at random instead)
        warnings.append(
            f"labels of shape {show_shape(np.shape(raw_labels))} are not class labels (masks or "
            "per-pixel targets?); ignored here"
        )
        raw_labels = None
    labels, names, label_problems, label_warnings = normalize_labels(raw_labels, n, options.keep_label_shape)
    problems += label_problems
    warnings += label_warnings
    if label_problems:
        labels = None
    if options.require_labels and raw_labels is None:
        problems.append(f"labels are required but {path.name} has none: {_LABEL_HINTS.get(reader.format, '')}")
    selection = select(n, labels, options)
    problems += selection.problems
    warnings += selection.warnings
    if labels is not None and selection.indices is not None:
        labels = labels[selection.indices]
    return _Plan(reader, n, selection, labels, reader.class_names or names, problems, warnings)


def _match_all(raw: dict[str, np.ndarray], specs: Sequence[TensorSpec]) -> tuple[dict, list[str], list[str]]:
    cast, problems, warnings = {}, [], []
    for spec in specs:
        if spec.name in raw:
            m = match_input(spec.name, raw[spec.name], spec)
            problems += m.problems
            warnings += m.warnings
            if m.array is not None:
                cast[spec.name] = m.array
    return cast, problems, warnings


def load(source: str | Path, specs: Sequence[TensorSpec], options: LoadOptions = LoadOptions()) -> Dataset:
    """Load, select, validate and cast data for the model inputs ``specs``.

    Every problem (structure, shapes, dtypes, NaN/Inf, labels) is collected and raised as one CalibrationError.
    Fewer samples than asked is a warning in ``Dataset.warnings``, not an error.
    """
    specs = validate_specs(specs, options.text)
    plan = _plan(source, specs, options)
    path, reader = plan.reader.path, plan.reader
    parts: dict[str, list[np.ndarray]] = {}
    try:
        with os_errors(path):
            if plan.n_available:
                for batch in reader.batches(plan.selection.indices, READ_BATCH):
                    for name, arr in batch.items():
                        parts.setdefault(name, []).append(arr)
    finally:
        reader.close()
    raw = {k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in parts.items()}  # no copy of one part
    cast, problems, warnings = _match_all(raw, specs)
    problems = plan.problems + problems
    _raise(path, problems)
    warnings = tuple(dict.fromkeys(plan.warnings + warnings))
    n_sel = plan.selection.count(plan.n_available)
    summary = CalibrationSummary(
        source=str(path),
        format=reader.format,
        n_available=plan.n_available,
        n_selected=n_sel,
        sampling=plan.selection.sampling,
        seed=options.seed,
        samples_requested=options.samples,
        inputs={s.name: InputStats.of(cast[s.name]) for s in specs},
        class_names=plan.class_names,
        class_counts=class_counts(plan.labels, plan.class_names),
        warnings=warnings,
    )
    return Dataset(
        inputs=cast, labels=plan.labels, summary=summary, warnings=warnings, specs=specs, class_names=plan.class_names
    )


class SourceStream:
    """A data source opened for streaming: counts and warnings up front, then batches of cast inputs + labels.

    Structural problems (missing keys, label problems, bad options) raise on construction; data problems
    (shape, dtype, NaN/Inf) raise when the batch holding them is reached, naming its sample range.
    """

    def __init__(
        self,
        source: str | Path,
        specs: Sequence[TensorSpec],
        options: LoadOptions = LoadOptions(),
        batch_size: int = 256,
    ) -> None:
        if batch_size < 1:
            raise CalibrationError(f"batch_size must be >= 1, got {batch_size}")
        self.specs = validate_specs(specs, options.text)
        self._plan = _plan(source, self.specs, options)
        if self._plan.problems:
            self._plan.reader.close()
            _raise(self._plan.reader.path, self._plan.problems)
        self.batch_size = batch_size
        self.path = self._plan.reader.path
        self.format = self._plan.reader.format
        self.n_available = self._plan.n_available
        self.n_selected = self._plan.selection.count(self.n_available)
        self.sampling = self._plan.selection.sampling
        self.class_names = self._plan.class_names
        self.warnings: list[str] = list(self._plan.warnings)

    def __len__(self) -> int:
        return self.n_selected

    @property
    def labels(self) -> np.ndarray | None:
        """Labels of every selected sample, in order (normalized like ``load``'s), or None without labels."""
        return self._plan.labels

    def __iter__(self) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray | None]]:
        pos = 0
        labels = self._plan.labels
        try:
            for raw in _guarded(self.path, self._plan.reader.batches(self._plan.selection.indices, self.batch_size)):
                n = len(next(iter(raw.values())))
                cast, problems, warnings = _match_all(raw, self.specs)
                if problems:
                    raise CalibrationError(
                        "\n".join(
                            [
                                f"data {self.path}, samples {pos}..{pos + n - 1}: {len(problems)} problem(s):",
                                *(f"- {p}" for p in problems),
                            ]
                        )
                    )
                self.warnings += [w for w in warnings if w not in self.warnings]
                yield cast, (None if labels is None else labels[pos : pos + n])
                pos += n
        finally:
            self._plan.reader.close()


def iter_source(
    source: str | Path, specs: Sequence[TensorSpec], options: LoadOptions = LoadOptions(), batch_size: int = 256
) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray | None]]:
    """Stream (inputs, labels) batches without holding the whole source in memory; yields the same samples,
    cast the same way, as ``load`` with the same options. See SourceStream for counts and warnings."""
    return iter(SourceStream(source, specs, options, batch_size))
