"""The input options every command shares (--input-range, --input-mean, --input-std), validated in one place."""

from __future__ import annotations

import math
from dataclasses import dataclass

from edge_tool.calibration.contract import RANGES
from edge_tool.calibration.serial import Record
from edge_tool.errors import UsageError, collect_and_raise

RANGE_HELP = (
    "What the model's image input takes, in 0..255 pixel terms: "
    + ", ".join(RANGES)
    + " (imagenet = mean 123.675,116.28,103.53 / std 58.395,57.12,57.375). Default: what the model says "
    "(a Rescaling/Normalization layer, graph constants, metadata), else measured on labelled image data."
)
MEAN_HELP = (
    "Model input = (pixel - mean) / std with the pixel in 0..255; one value or one per channel, e.g. "
    "127.5 (instead of --input-range; default 0 when only --input-std is given)."
)
STD_HELP = "See --input-mean; e.g. 255 for x/255 (default 1 when only --input-mean is given)."


def parse_floats(option: str, value: str | None) -> tuple[float, ...] | None:
    """'127.5' or '123.7,116.3,103.5' -> floats; UsageError naming the option for anything else."""
    if value is None:
        return None
    try:
        return tuple(float(v) for v in value.split(","))
    except ValueError:
        raise UsageError(
            f"{option} expects a number or a comma list of numbers (one per channel), got {value!r}."
        ) from None


@dataclass(frozen=True)
class ContractOptions(Record):
    """--input-range or --input-mean/--input-std as given (all None: resolve from the model or the data)."""

    input_range: str | None = None
    input_mean: tuple[float, ...] | None = None
    input_std: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("input_mean", "input_std"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(float(v) for v in value))
        if self.input_range is not None:
            object.__setattr__(self, "input_range", str(self.input_range).strip().lower())
        collect_and_raise(self.problems(), UsageError, "Invalid input options:")

    @classmethod
    def from_cli(cls, input_range: str | None, input_mean: str | None, input_std: str | None) -> ContractOptions:
        """From the command line's strings."""
        return cls(input_range, parse_floats("--input-mean", input_mean), parse_floats("--input-std", input_std))

    def problems(self) -> list[str]:
        """Everything wrong with the combination (all at once)."""
        problems = []
        if self.input_range is not None and self.input_range not in RANGES:
            problems.append(f"--input-range expects one of {', '.join(RANGES)}, got {self.input_range!r}.")
        if self.input_range is not None and (self.input_mean is not None or self.input_std is not None):
            problems.append("--input-range and --input-mean/--input-std both set the input normalization; give one.")
        for opt, values in (("--input-mean", self.input_mean), ("--input-std", self.input_std)):
            if values is not None and not (len(values) in (1, 3) and all(math.isfinite(v) for v in values)):
                problems.append(f"{opt} expects 1 or 3 finite numbers (one per channel), got {list(values)}.")
        if self.input_std is not None and any(v == 0 for v in self.input_std):
            problems.append(f"--input-std must not contain 0, got {list(self.input_std)}.")
        return problems

    @property
    def explicit(self) -> bool:
        """True when the user set the normalization."""
        return self.input_range is not None or self.input_mean is not None or self.input_std is not None

    def normalization(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(mean, std) the options give (only meaningful when ``explicit``)."""
        if self.input_range is not None:
            return RANGES[self.input_range]
        return self.input_mean or (0.0,), self.input_std or (1.0,)

    def flag(self) -> str:
        """The options as typed, e.g. ``--input-range 0..1`` or ``--input-mean 127.5 --input-std 127.5``."""
        if self.input_range is not None:
            return f"--input-range {self.input_range}"
        parts = []
        for opt, values in (("--input-mean", self.input_mean), ("--input-std", self.input_std)):
            if values is not None:
                parts.append(f"{opt} {','.join(f'{v:g}' for v in values)}")
        return " ".join(parts)
