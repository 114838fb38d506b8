"""The spread between devices: each ``--device`` row's outputs against the host row of the same artefact (host
LiteRT), batch by batch in the accuracy pass, so a fleet owner sees where boards and runtime versions disagree.

Per device row: how many samples differ at all, how many change their top-1 class, the largest and the mean
absolute difference of the primary output and, for a quantized output, the largest difference in quantization
steps. Computed on the outputs both rows returned (dequantized with the file's own scale), never on the
reference's, so a difference here is the runtime's or the CPU's, not the model's.
"""

from __future__ import annotations

import numpy as np


class Spread:
    """Running figures of one device row against its host row (``fold`` per batch, ``record`` at the end)."""

    def __init__(self, host: int, step: float | None):
        self.host, self.step = host, step
        self.samples = self.differing = self.top1 = self.values = 0
        self.max_abs, self.sum_abs = 0.0, 0.0

    def fold(self, host: np.ndarray, device: np.ndarray) -> None:
        """Add one batch: the host row's and the device row's primary outputs for the same samples."""
        a, b = np.asarray(host, np.float64), np.asarray(device, np.float64)
        diff = np.abs(a - b).reshape(len(a), -1)
        self.samples += len(a)
        self.values += diff.size
        self.differing += int(np.count_nonzero(diff.max(axis=1) > 0)) if diff.size else 0
        if diff.size:
            self.max_abs = max(self.max_abs, float(diff.max()))
            self.sum_abs += float(diff.sum())
        if a.ndim >= 2 and a.shape[-1] > 1:
            self.top1 += int(np.count_nonzero(a.argmax(-1).reshape(len(a), -1) != b.argmax(-1).reshape(len(b), -1)))

    def record(self, labels: list[str]) -> dict:
        """The row's ``spread`` object (schemas.md); ``labels``: the rows' labels, in runner order."""
        return {
            "against": labels[self.host],
            "samples": self.samples,
            "samples_differing": self.differing,
            "top1_disagreements": self.top1,
            "max_abs_diff": self.max_abs,
            "mean_abs_diff": self.sum_abs / self.values if self.values else 0.0,
            "max_steps": round(self.max_abs / self.step) if self.step else None,
        }


def pair_rows(runners: list) -> dict[int, int]:
    """{index of a device runner: index of the host runner of the same artefact}."""
    host = {id(r.art): i for i, r in enumerate(runners) if getattr(r, "board", None) is None}
    return {i: host[id(r.art)] for i, r in enumerate(runners) if getattr(r, "board", None) and id(r.art) in host}


def output_step(runner, name: str) -> float | None:
    """The quantization step of a device runner's output ``name`` (None for a float output or before it ran)."""
    outputs = list(getattr(getattr(runner, "bindings", None), "outputs", None) or ())
    named = [b for b in outputs if b.name == name] or (outputs if len(outputs) == 1 else [])
    return float(named[0].scale) if named and named[0].quantized else None


def fold_batch(spreads: dict[int, Spread], runners: list, outs: list, name: str) -> None:
    """Fold one batch's primary outputs (``outs[i]`` of runner i, None when it failed) into every device row's
    Spread against its host row."""
    for dev, host in pair_rows(runners).items():
        if outs[dev] is None or outs[host] is None or name not in outs[dev] or name not in outs[host]:
            continue
        if dev not in spreads:
            spreads[dev] = Spread(host, output_step(runners[dev], name))
        spreads[dev].fold(outs[host][name], outs[dev][name])


def describe(spread: dict) -> str:
    """One sentence: how a device row's outputs differ from its host row's."""
    steps = f", up to {spread['max_steps']} quantization steps" if spread.get("max_steps") else ""
    if not spread["samples_differing"]:
        return f"outputs identical to the host row {spread['against']} on all {spread['samples']} samples"
    return (
        f"outputs differ from the host row {spread['against']} on {spread['samples_differing']} of {spread['samples']} samples "
        f"(max {spread['max_abs_diff']:.3g}, mean {spread['mean_abs_diff']:.3g}{steps}), "
        f"{spread['top1_disagreements']} top-1 disagreement(s)"
    )


def spread_notes(results) -> list[str]:
    """Footer lines: each device row's spread against its host row (``--device`` rows that ran)."""
    return [f"Spread: {r.artifact} ({r.runtime}): {describe(r.spread)}." for r in results if r.spread]
