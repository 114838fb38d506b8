"""Labelled data for QAT: inputs by input name, labels by output name; loading, checking and splitting it.

A training/eval ``.npz`` holds ``x`` (or one array per input, named after it) and ``y`` for a single-output
model, or one label array per output, named after the output, for a multi-output model. Other formats the
``calibration`` package reads (image folders, TFRecord, CSV) work for single-output models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool import calibration
from edge_tool.errors import DataError, collect_and_raise


@dataclass(frozen=True, eq=False)
class Labelled:
    """Samples: ``x`` {input name: array}, ``y`` {output name: labels}; all the same length. ``tasks``: each
    output's task, when it was decided on the labels as given (before its task normalised them: a regression
    task flattens image-shaped targets, which would read as another task afterwards)."""

    x: dict
    y: dict
    tasks: tuple = ()

    def __len__(self) -> int:
        return len(next(iter(self.x.values())))

    def take(self, idx: np.ndarray) -> Labelled:
        """The samples at ``idx``."""
        return Labelled({k: v[idx] for k, v in self.x.items()}, {k: v[idx] for k, v in self.y.items()}, self.tasks)

    def inputs(self, names: list[str]) -> list[np.ndarray]:
        """Input arrays in ``names`` order."""
        return [self.x[n] for n in names]

    def labels(self, names: list[str]) -> list[np.ndarray]:
        """Label arrays in ``names`` order."""
        return [self.y[n] for n in names]


def from_arrays(x, y, input_names: list[str], output_names: list[str], what: str = "Training data") -> Labelled:
    """Wrap arrays (or dicts keyed by input/output names) as Labelled; DataError for missing keys."""
    problems = []

    def as_dict(value, names, what):
        if isinstance(value, dict):
            missing = [n for n in names if n not in value]
            if missing:
                problems.append(
                    f"{what} has no array for {', '.join(map(repr, missing))}; it has "
                    f"{', '.join(map(repr, value)) or 'nothing'} (keys must be named after the model's "
                    f"{what.split()[0]}s: {', '.join(map(repr, names))})"
                )
            return {n: np.asarray(value[n]) for n in names if n in value}
        if len(names) != 1:
            problems.append(
                f"the model has {len(names)} {what.split()[0]}s ({', '.join(map(repr, names))}); give "
                f"{what} as one array per {what.split()[0]}, keyed by name"
            )
            return {}
        return {names[0]: np.asarray(value)}

    xs = as_dict(x, input_names, "input data")
    ys = as_dict(y, output_names, "output labels")
    lengths = {f"input {k!r}": len(v) for k, v in xs.items()} | {f"labels {k!r}": len(v) for k, v in ys.items()}
    if len(set(lengths.values())) > 1:
        problems.append("arrays differ in length: " + ", ".join(f"{k} {n}" for k, n in lengths.items()))
    if lengths and max(lengths.values()) == 0:
        problems.append("the data is empty")
    collect_and_raise(problems, DataError, f"{what} does not match the model's inputs/outputs for QAT:")
    return Labelled(xs, ys)


def load_labelled(path: Path, input_specs, output_names: list[str], seed: int, what: str) -> Labelled:
    """Load every sample of ``path`` with labels: ``y`` for one output, keys named after the outputs otherwise."""
    if len(output_names) == 1:
        ds = calibration.load(
            path,
            input_specs,
            calibration.LoadOptions(samples=None, seed=seed, require_labels=True, keep_label_shape=True),
        )
        if ds.labels is None:
            raise DataError(
                f"{what} {path} has no labels (an .npz needs 'y'; a CSV a label column; an image "
                "folder one sub-folder per class)."
            )
        return Labelled(dict(ds.inputs), {output_names[0]: ds.labels})
    if Path(path).suffix.lower() != ".npz":
        raise DataError(
            f"{what} for a model with {len(output_names)} outputs must be an .npz with one label "
            f"array per output, named {', '.join(map(repr, output_names))}; got {path}."
        )
    labels, x = {}, None
    for name in output_names:
        ds = calibration.load(
            path,
            input_specs,
            calibration.LoadOptions(
                samples=None, seed=seed, label_key=name, require_labels=True, keep_label_shape=True
            ),
        )
        labels[name], x = ds.labels, dict(ds.inputs)
    return Labelled(x, labels)


def split(data: Labelled, fraction: float, seed: int, stratify: str | None) -> tuple[Labelled, Labelled]:
    """(rest, held-out): a seeded split keeping ``fraction`` of every class of ``data.y[stratify]`` aside."""
    rng = np.random.default_rng(seed)
    n = len(data)
    groups = (
        [np.arange(n)]
        if stratify is None
        else [np.flatnonzero(data.y[stratify] == c) for c in np.unique(data.y[stratify])]
    )
    held = []
    for g in groups:
        k = int(round(len(g) * fraction))
        k = min(max(k, 1 if len(g) >= 2 else 0), len(g) - 1) if len(g) else 0
        held.extend(rng.permutation(g)[:k].tolist())
    held_idx = np.array(sorted(held), dtype=np.int64)
    rest_idx = np.setdiff1d(np.arange(n), held_idx)
    return data.take(rest_idx), data.take(held_idx)
