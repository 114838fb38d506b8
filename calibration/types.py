"""Configuration types of the calibration package: input specs, sampling modes, load options, the error."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import numpy as np

from edge_tool.errors import DataError, UsageError, collect_and_raise


class CalibrationError(DataError):
    """Calibration / eval data is missing, unreadable or does not fit the model inputs (exit 2)."""


def show_shape(shape: Sequence[int | None]) -> str:
    """Render a shape with unknown dims as "any", e.g. ``(any, 8, 8, 1)``."""
    parts = ["any" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


@dataclass(frozen=True)
class InputSpec:
    """One model input: name, numpy dtype name and shape (None = batch / unknown dim)."""

    name: str
    dtype: str
    shape: tuple

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.name, str) or not self.name:
            problems.append(f"input name must be a non-empty string, got {self.name!r}")
        try:
            dt = np.dtype(self.dtype)
            object.__setattr__(self, "dtype", dt.name)
            if dt.kind not in "biuf":
                problems.append(f"input {self.name!r}: dtype {dt.name} is not numeric; calibration supports bool/int/float inputs")
        except TypeError:
            problems.append(f"input {self.name!r}: unknown dtype {self.dtype!r} (use a numpy dtype name such as 'float32')")
        try:
            shape = tuple(None if d is None or int(d) < 0 else int(d) for d in self.shape)
            object.__setattr__(self, "shape", shape)
            if not shape:
                problems.append(f"input {self.name!r}: shape must include the batch dim, got ()")
        except (TypeError, ValueError):
            problems.append(f"input {self.name!r}: shape must be a tuple of ints/None, got {self.shape!r}")
        collect_and_raise(problems, UsageError, "invalid input spec:")

    @property
    def sample_shape(self) -> tuple:
        """The shape of one sample (the spec shape without its batch dim)."""
        return self.shape[1:]

    @classmethod
    def from_tensor_info(cls, info: Any) -> "InputSpec":
        """Build from any object with ``name``, ``dtype`` (numpy name) and ``shape`` (e.g. modelio.TensorInfo)."""
        return cls(name=info.name, dtype=str(info.dtype), shape=tuple(info.shape))


def specs_from(infos: Sequence[Any]) -> tuple[InputSpec, ...]:
    """Convert signature tensor infos (``name``/``dtype``/``shape``) into InputSpecs, keeping their order."""
    return tuple(InputSpec.from_tensor_info(i) for i in infos)


class Sampling(str, Enum):
    """How samples are picked when fewer than the source holds are asked for."""

    AUTO = "auto"              # stratified when labels exist, else random
    RANDOM = "random"          # seeded uniform sample without replacement
    STRATIFIED = "stratified"  # seeded, proportional per class, every class at least once when possible
    FIRST = "first"            # the first N in source order


@dataclass(frozen=True)
class LoadOptions:
    """What to load: how many samples, how to pick them, which TFRecord/CSV keys hold inputs and labels."""

    samples: int | None = 200
    seed: int = 0
    sampling: Sampling = Sampling.AUTO
    feature_key: str | None = None
    label_key: str | None = None
    require_labels: bool = False

    def __post_init__(self) -> None:
        problems = []
        if self.samples is not None and (isinstance(self.samples, bool) or not isinstance(self.samples, int)
                                         or self.samples < 1):
            problems.append(f"samples must be a whole number >= 1 (or None for all), got {self.samples!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            problems.append(f"seed must be a whole number >= 0, got {self.seed!r}")
        try:
            object.__setattr__(self, "sampling", Sampling(self.sampling))
        except ValueError:
            allowed = ", ".join(s.value for s in Sampling)
            problems.append(f"sampling must be one of {allowed}, got {self.sampling!r}")
        collect_and_raise(problems, UsageError, "invalid calibration options:")


def validate_specs(specs: Sequence[InputSpec]) -> tuple[InputSpec, ...]:
    """Check the spec list is non-empty with unique names; return it as a tuple."""
    specs = tuple(specs)
    problems = []
    if not specs:
        problems.append("the model has no inputs to calibrate")
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"input names must be unique, repeated: {', '.join(dupes)}")
    bad = [s for s in specs if not isinstance(s, InputSpec)]
    if bad:
        problems.append(f"specs must be InputSpec objects, got {type(bad[0]).__name__}")
    collect_and_raise(problems, UsageError, "invalid input specs:")
    return specs
