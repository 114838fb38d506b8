"""Match raw arrays to a TensorSpec: shape (with an explicit trailing-channel fix), safe casting, NaN/Inf.

Every function returns problems as strings instead of raising, so the caller can report them all at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .spec import STRING, TensorSpec, show_shape


@dataclass
class Match:
    """Result of matching one input: the cast array (None when there were problems), problems, warnings."""

    array: np.ndarray | None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def check_shape(name: str, arr: np.ndarray, spec: TensorSpec) -> tuple[np.ndarray | None, list[str], list[str]]:
    """Compare ``arr`` (n, ...) with the spec shape; add a missing trailing channel of 1 (with a warning)."""
    want = spec.sample_shape
    have = arr.shape[1:]

    def fits(h: tuple, w: tuple) -> bool:
        return len(h) == len(w) and all(wd is None or wd == hd for hd, wd in zip(h, w))

    if fits(have, want):
        return arr, [], []
    if want and want[-1] == 1 and fits(have, want[:-1]):
        msg = (
            f"input {name!r}: samples have shape {show_shape(have)} with no channel dim; added a trailing "
            f"channel of 1 to match the model's {show_shape(spec.shape)}"
        )
        return arr[..., np.newaxis], [], [msg]
    return None, [f"input {name!r}: expected shape {show_shape(spec.shape)}, found {show_shape(arr.shape)}"], []


def reshape_flat(name: str, flat: np.ndarray, spec: TensorSpec, what: str) -> tuple[np.ndarray | None, str | None]:
    """Reshape (n, L) flat values (CSV row / TFRecord list) to the spec's sample shape; one unknown dim is inferred."""
    want = spec.sample_shape
    length = flat.shape[1]
    known = math.prod(d for d in want if d is not None)
    unknown = [i for i, d in enumerate(want) if d is None]
    if not unknown and known == length:
        return flat.reshape((flat.shape[0], *want)), None
    if len(unknown) == 1 and known and length % known == 0:
        shape = tuple(length // known if d is None else d for d in want)
        return flat.reshape((flat.shape[0], *shape)), None
    need = f"{known} values per sample" if not unknown else f"a multiple of {known} values per sample"
    if len(unknown) > 1:
        need = "a fully known sample shape to reshape flat values"
    return None, (
        f"input {name!r}: expected shape {show_shape(spec.shape)} = {need}, found {length} values per sample in {what}"
    )


def check_values(name: str, arr: np.ndarray, target: np.dtype) -> list[str]:
    """Problems casting ``arr`` to ``target``: non-numeric data, NaN/Inf, fractions or out-of-range values."""
    if arr.dtype.kind not in "biuf":
        return [f"input {name!r}: holds non-numeric data (dtype {arr.dtype}); the model wants {target.name}"]
    problems = []
    finite = None
    if arr.dtype.kind == "f":
        nan, inf = int(np.isnan(arr).sum()), int(np.isinf(arr).sum())
        if nan or inf:
            bad = ~np.isfinite(arr).reshape(len(arr), -1).all(axis=1) if arr.ndim > 1 else ~np.isfinite(arr)
            problems.append(
                f"input {name!r}: {nan} NaN and {inf} Inf values in {int(bad.sum())} of {len(arr)} "
                "samples; clean the data or drop those samples"
            )
            finite = arr[np.isfinite(arr)]
    vals = arr if finite is None else finite
    if vals.size == 0 or arr.dtype.kind == "b":
        return problems
    lo, hi = vals.min(), vals.max()
    if target.kind in "iu":
        info = np.iinfo(target)
        if lo < info.min or hi > info.max:
            problems.append(
                f"input {name!r}: values range {_fmt(lo)}..{_fmt(hi)}, outside the {target.name} "
                f"range {info.min}..{info.max} the model takes"
            )
        if vals.dtype.kind == "f":
            frac = vals != np.round(vals)
            n_frac = int(frac.sum())
            if n_frac:
                example = _fmt(float(vals[frac].flat[0]))
                problems.append(
                    f"input {name!r}: {n_frac} values have a fractional part (e.g. {example}) but the "
                    f"model input is {target.name}; round or quantize the data first"
                )
    elif target.kind == "f" and vals.dtype.kind == "f" and target.itemsize < vals.dtype.itemsize:
        big = float(np.finfo(target).max)
        if max(abs(float(lo)), abs(float(hi))) > big:
            problems.append(
                f"input {name!r}: values range {_fmt(lo)}..{_fmt(hi)}, beyond the {target.name} limit of +-{big:.6g}"
            )
    elif target.kind == "b" and (lo < 0 or hi > 1):
        problems.append(f"input {name!r}: values range {_fmt(lo)}..{_fmt(hi)}; a bool input takes 0/1 only")
    return problems


def match_input(name: str, arr: np.ndarray, spec: TensorSpec) -> Match:
    """Shape-check, value-check and cast one input's samples to the spec dtype."""
    arr = np.asarray(arr)
    if spec.dtype == STRING:
        return _match_text(name, arr, spec)
    shaped, problems, warnings = check_shape(name, arr, spec)
    target = np.dtype(spec.dtype)
    problems += check_values(name, arr, target)
    if problems or shaped is None:
        return Match(None, problems, warnings)
    out = shaped if shaped.dtype == target else shaped.astype(target)
    return Match(np.ascontiguousarray(out), problems, warnings)


def _match_text(name: str, arr: np.ndarray, spec: TensorSpec) -> Match:
    """A string input's samples: text (str or bytes; an object array of them becomes str), shape-checked."""
    if arr.dtype.kind == "O" and all(isinstance(v, (str, bytes)) for v in arr.flat):
        arr = arr.astype(str if all(isinstance(v, str) for v in arr.flat) else bytes)
    if arr.dtype.kind not in "US":
        return Match(None, [f"input {name!r}: holds non-text data (dtype {arr.dtype}); the model wants strings"])
    shaped, problems, warnings = check_shape(name, arr, spec)
    return Match(None if shaped is None else np.ascontiguousarray(shaped), problems, warnings)


def normalize_labels(
    labels: np.ndarray | None, n: int, keep_shape: bool = False
) -> tuple[np.ndarray | None, tuple[str, ...] | None, list[str], list[str]]:
    """Make labels 1-D: squeeze (n, 1), argmax one-hot (n, k), map strings to sorted class indices. With
    ``keep_shape`` numeric labels of any shape are kept as they are (their task checks them), only counted.

    Returns (labels, class_names or None, problems, warnings).
    """
    if labels is None:
        return None, None, [], []
    labels = np.asarray(labels)
    if keep_shape and labels.ndim >= 1 and labels.dtype.kind in "iufb":
        problems = (
            []
            if len(labels) == n
            else [f"labels: {len(labels)} labels for {n} input samples; they must match one to one"]
        )
        return labels, None, problems, []
    problems, warnings, names = [], [], None
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    elif labels.ndim == 2 and labels.shape[1] > 1:
        warnings.append(
            f"labels have shape {show_shape(labels.shape)}; treated as one-hot/scores and "
            "converted to class indices with argmax"
        )
        labels = labels.argmax(axis=1)
    elif labels.ndim != 1:
        return None, None, [f"labels: expected shape (n,) or (n, 1), found {show_shape(labels.shape)}"], []
    if len(labels) != n:
        problems.append(f"labels: {len(labels)} labels for {n} input samples; they must match one to one")
    if labels.dtype.kind in "USO":
        text = labels.astype(str)
        names = tuple(sorted(set(text.tolist())))
        lookup = {c: i for i, c in enumerate(names)}
        labels = np.array([lookup[t] for t in text.tolist()], dtype=np.int64)
    elif labels.dtype.kind == "f" and np.isfinite(labels).all() and (labels == np.round(labels)).all():
        labels = labels.astype(np.int64)
    elif labels.dtype.kind in "iub":
        labels = labels.astype(np.int64)
    return labels, names, problems, warnings


def is_classlike(labels: np.ndarray | None) -> bool:
    """True when labels are class indices (integers) that can drive stratified sampling."""
    return labels is not None and labels.dtype.kind in "iu"
