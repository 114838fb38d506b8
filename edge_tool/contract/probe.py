"""Find out what an image input takes by asking the float reference: its accuracy on a small stratified sample of
labelled images under each usual normalization (0..255, 0..1, -1..1, ImageNet mean/std).

"Clearly best" means: the best candidate reaches ``chance + MIN_GAIN × (1 - chance)`` (30 % of the way from
chance to perfect: 37 % for 10 classes, 47.5 % for 4, 65 % for 2) and beats every other by at least ``MARGIN``
(10 points, and at least 4 images of the sample). Anything less is not evidence enough to pick for the user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool import calibration
from edge_tool.calibration.contract import RANGES, ImageContract

SAMPLE = 64
MIN_GAIN = 0.3
MARGIN = 0.10
MIN_MARGIN_IMAGES = 4


@dataclass(frozen=True)
class ProbeResult:
    """Reference top-1 accuracy per candidate normalization on ``n`` labelled images of ``classes`` classes."""

    scores: dict[str, float]
    n: int
    classes: int
    source: str

    @property
    def floor(self) -> float:
        """The accuracy a candidate needs to count as evidence."""
        chance = 1.0 / max(self.classes, 1)
        return chance + MIN_GAIN * (1 - chance)

    @property
    def margin(self) -> float:
        """How far ahead of every other candidate the best one must be."""
        return max(MARGIN, MIN_MARGIN_IMAGES / max(self.n, 1))

    def clear_winner(self, among: list[str] | None = None) -> str | None:
        """The clearly best candidate (see the module docstring) among ``among`` (default all), or None."""
        names = sorted(among or self.scores, key=lambda k: -self.scores[k])
        if not names or self.scores[names[0]] < self.floor:
            return None
        if len(names) > 1 and self.scores[names[0]] - self.scores[names[1]] < self.margin:
            return None
        return names[0]

    def far_better(self, name: str) -> str | None:
        """The candidate the probe would pick over ``name`` (the same rule: above the floor, ``margin`` ahead of
        it), if any: an explicit or declared normalization is checked the way a measured one is chosen."""
        best = max(self.scores, key=lambda k: self.scores[k])
        if best != name and self.scores[best] >= self.floor and self.scores[best] - self.scores[name] >= self.margin:
            return best
        return None

    def evidence(self, first: str | None = None) -> str:
        """ "0..1: reference 89 % on 64 labelled images of images/train (4 classes); 0..255: 31 %; ..."."""
        order = sorted(self.scores, key=lambda k: (k != first, -self.scores[k]))
        head, *rest = order
        text = (
            f"{_label(head)}: reference {self.scores[head]:.0%} on {self.n} labelled images of {self.source} "
            f"({self.classes} classes)"
        )
        return "; ".join([text, *(f"{_label(k)}: {self.scores[k]:.0%}" for k in rest)])


def _label(name: str) -> str:
    return f"input range {name}" if name in RANGES and name != "imagenet" else name


def candidates(contract: ImageContract) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """The usual normalizations that fit the input's channel count."""
    return {k: v for k, v in RANGES.items() if len(v[0]) in (1, contract.channels)}


def run_probe(
    contract: ImageContract,
    spec,
    data: Path,
    predict: Callable[[dict], dict],
    width: int,
    index_for: Callable,
    seed: int,
    extra: dict | None = None,
) -> ProbeResult | None:
    """Score every candidate (and ``extra`` {name: (mean, std)}) on up to SAMPLE stratified labelled images of the
    folder ``data``; None when the folder has no class sub-folders. ``index_for(class names)`` maps folder class
    i to the model's output index (None: folder order; DataError when they cannot be matched); ``width`` is the
    model's number of classes."""
    raw = contract.with_normalization((0.0,), (1.0,), contract.source, contract.evidence)
    ds = calibration.load(data, [spec], calibration.LoadOptions(samples=SAMPLE, seed=seed, images=(raw,)))
    if ds.labels is None or ds.class_names is None:
        return None
    labels = np.asarray(ds.labels, dtype=np.int64)
    index_map = index_for(tuple(ds.class_names))
    if index_map is not None:
        labels = index_map[labels]
    pixels = ds.inputs[spec.name]
    options = {**candidates(contract), **(extra or {})}
    scores = {}
    for name, (mean, std) in options.items():
        x = contract.with_normalization(mean, std, contract.source, "").normalize(pixels)
        scores[name] = float(np.mean(_top1(predict, spec.name, x, width) == labels))
    return ProbeResult(scores, len(labels), width, str(data))


def _top1(predict: Callable[[dict], dict], name: str, x: np.ndarray, width: int, batch: int = 32) -> np.ndarray:
    """Argmax of the output holding ``width`` class scores, batch by batch."""
    picks = []
    for start in range(0, len(x), batch):
        out = predict({name: x[start : start + batch]})
        scores = next(
            (np.asarray(v) for _, v in sorted(out.items()) if np.ndim(v) == 2 and np.shape(v)[-1] == width), None
        )
        if scores is None:
            raise ValueError(f"no output has {width} class scores")
        picks.append(scores.argmax(axis=1))
    return np.concatenate(picks)
