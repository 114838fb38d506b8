"""The input contract: how 0..255 pixels become what a model's image input takes, one record per image input.

``model input = (pixel - mean[c]) / std[c]`` with the pixel in 0..255, after decoding to the channel order and
resizing to H×W with the named method. ``x/255`` is mean 0, std 255; ``[-1, 1]`` is 127.5/127.5; a model that
rescales inside takes raw pixels (mean 0, std 1). Every image reader, the TFLite/TFJS metadata and the demo page
use this one record (``edge_tool.contract`` resolves it); nothing else may turn pixels into model input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from .errors import UsageError, collect_and_raise
from .serial import Record

LAYOUTS = ("NHWC", "NCHW", "NHW")
CHANNEL_ORDERS = ("RGB", "BGR", "L")
RESIZE = ("bilinear", "nearest", "area")
SOURCES = ("model", "metadata", "probe", "option", "default")
# the usual value ranges (--input-range), as (mean, std) in 0..255 units; "imagenet" is torchvision's mean/std
RANGES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "0..255": ((0.0,), (1.0,)),
    "0..1": ((0.0,), (255.0,)),
    "-1..1": ((127.5,), (127.5,)),
    "imagenet": ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),
}


def _floats(values: Any, channels: int, what: str, problems: list[str]) -> tuple[float, ...]:
    vals = tuple(float(v) for v in values)
    if len(vals) == 1 and channels > 1:
        vals = vals * channels
    if len(vals) != channels or not all(math.isfinite(v) for v in vals):
        problems.append(f"{what} needs {channels} finite value(s) (one per channel), got {list(values)}")
    return vals


@dataclass(frozen=True)
class ImageContract(Record):
    """What one image input takes: layout, size, channel order, per-channel mean/std (0..255 units), resize
    method, and where that was learned (``source``) with the evidence in words. Its JSON form (``to_dict``, the
    serializer's) is manifest.json's ``input_contract`` record."""

    input: str
    layout: str
    height: int | None
    width: int | None
    channels: int
    channel_order: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    resize: str = "bilinear"
    source: str = "default"
    evidence: str = ""

    def __post_init__(self) -> None:
        problems: list[str] = []
        object.__setattr__(self, "mean", _floats(self.mean, self.channels, "mean", problems))
        object.__setattr__(self, "std", _floats(self.std, self.channels, "std", problems))
        if any(s == 0 for s in self.std):
            problems.append(f"std must not contain 0, got {list(self.std)}")
        for name, allowed in (
            ("layout", LAYOUTS),
            ("channel_order", CHANNEL_ORDERS),
            ("resize", RESIZE),
            ("source", SOURCES),
        ):
            if getattr(self, name) not in allowed:
                problems.append(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if (self.channel_order == "L") != (self.channels == 1):
            problems.append(f"channel order {self.channel_order} does not fit {self.channels} channel(s)")
        collect_and_raise(problems, UsageError, f"invalid input contract for {self.input!r}:")

    @property
    def value_range(self) -> tuple[float, float]:
        """The lowest and highest model-input value a 0..255 pixel can give (over every channel)."""
        ends = [(v - m) / s for m, s in zip(self.mean, self.std) for v in (0.0, 255.0)]
        return min(ends), max(ends)

    @property
    def identity(self) -> bool:
        """True when the model takes raw 0..255 pixel values."""
        return all(m == 0 for m in self.mean) and all(s == 1 for s in self.std)

    def named_range(self) -> str | None:
        """The --input-range name this normalization equals, if any."""
        for name, (mean, std) in RANGES.items():
            if _close(self.mean, mean, self.channels) and _close(self.std, std, self.channels):
                return name
        return None

    def describe(self) -> str:
        """The preprocessing in a few words, e.g. ``(pixel - 0) / 255 → 0..1, RGB, bilinear to 32×32``."""

        def short(values: tuple[float, ...]) -> str:
            uniq = sorted(set(values))
            return f"{uniq[0]:g}" if len(uniq) == 1 else "[" + ", ".join(f"{v:g}" for v in values) + "]"

        lo, hi = self.value_range
        size = f"{self.height}×{self.width}" if self.height and self.width else "the image's own size"
        return (
            f"(pixel - {short(self.mean)}) / {short(self.std)} → {lo:.3g}..{hi:.3g}, {self.channel_order}, "
            f"{self.resize} to {size}"
        )

    def with_normalization(self, mean, std, source: str, evidence: str) -> ImageContract:
        """This contract with another mean/std and its source."""
        return replace(self, mean=tuple(mean), std=tuple(std), source=source, evidence=evidence)

    def apply(self, pixels):
        """uint8 pixels (N, H, W[, C]) in this contract's channel order → float32 model input in its layout."""
        return self.normalize(self.arrange(pixels))

    def arrange(self, pixels):
        """Pixels (N, H, W[, C]) as float32 in the model's layout (NHW: channel dropped; NCHW: transposed)."""
        import numpy as np  # noqa: PLC0415

        x = np.asarray(pixels, dtype=np.float32)
        if self.layout == "NHW" and x.ndim == 4:
            x = x[..., 0]
        if self.layout == "NCHW":
            x = np.transpose(x, (0, 3, 1, 2))
        return x

    def normalize(self, x):
        """(x - mean) / std per channel, on float32 values (0..255) already in the model's layout."""
        import numpy as np  # noqa: PLC0415

        if self.identity:
            return np.ascontiguousarray(x, dtype=np.float32)
        shape = {"NHWC": (1, 1, 1, -1), "NCHW": (1, -1, 1, 1), "NHW": (1, 1, 1)}[self.layout]
        mean = np.asarray(self.mean[:1] if self.layout == "NHW" else self.mean, dtype=np.float32).reshape(shape)
        std = np.asarray(self.std[:1] if self.layout == "NHW" else self.std, dtype=np.float32).reshape(shape)
        return np.ascontiguousarray((np.asarray(x, dtype=np.float32) - mean) / std, dtype=np.float32)


def _close(a: tuple[float, ...], b: tuple[float, ...], channels: int) -> bool:
    b = b * channels if len(b) == 1 else b
    return len(a) == len(b) and all(abs(x - y) <= 1e-3 * max(1.0, abs(y)) for x, y in zip(a, b))


def for_input(contracts, name: str) -> ImageContract | None:
    """The contract of input ``name`` among ``contracts`` (None when that input has none)."""
    return next((c for c in contracts or () if c.input == name), None)
