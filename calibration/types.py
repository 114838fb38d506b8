"""Configuration types of the calibration package: sampling modes and load options (specs: calibration.spec)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .errors import UsageError, collect_and_raise


class Sampling(str, Enum):
    """How samples are picked when fewer than the source holds are asked for."""

    AUTO = "auto"  # stratified when labels exist, else random
    RANDOM = "random"  # seeded uniform sample without replacement
    STRATIFIED = "stratified"  # seeded, proportional per class, every class at least once when possible
    FIRST = "first"  # the first N in source order


@dataclass(frozen=True)
class LoadOptions:
    """What to load: how many samples, how to pick them, which TFRecord/CSV keys hold inputs and labels, and how
    decoded images become model input (``images``: without a contract for an input, its pixels stay 0..255)."""

    samples: int | None = 200
    seed: int = 0
    sampling: Sampling = Sampling.AUTO
    feature_key: str | None = None
    label_key: str | None = None
    require_labels: bool = False
    keep_label_shape: bool = False  # eval: labels as stored (multi-hot rows, masks, real targets), counted only
    images: tuple = ()  # calibration.contract.ImageContract per image input: how image files become model input
    text: bool = False  # eval: a string input takes text (calibration of one is refused: string ops have no int form)

    def __post_init__(self) -> None:
        problems = []
        if self.samples is not None and (
            isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1
        ):
            problems.append(f"samples must be a whole number >= 1 (or None for all), got {self.samples!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            problems.append(f"seed must be a whole number >= 0, got {self.seed!r}")
        try:
            object.__setattr__(self, "sampling", Sampling(self.sampling))
        except ValueError:
            allowed = ", ".join(s.value for s in Sampling)
            problems.append(f"sampling must be one of {allowed}, got {self.sampling!r}")
        collect_and_raise(problems, UsageError, "invalid calibration options:")
