"""Resolve a model's input contract once: the option, else what the model says, else embedded metadata, else the
float reference measured on labelled images; refused (exit 2, naming the option) when none of them can tell.

Every source but the measurement is checked against it when labelled images are at hand: a reference that does
clearly better under another normalization (the rule that picks one) is a warning (the explicit option still wins).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.calibration.contract import RANGES, ImageContract
from edge_tool.contract.declared import declared, from_metadata, image_contract
from edge_tool.contract.options import ContractOptions
from edge_tool.contract.probe import ProbeResult, run_probe
from edge_tool.errors import DataError

OPTION_HINT = (
    "--input-range 0..1|-1..1|0..255|imagenet (or --input-mean/--input-std: model input = (pixel - mean) / std)"
)


@dataclass(frozen=True)
class Resolution:
    """The contracts of every image input, what to print about them, and warnings."""

    contracts: tuple[ImageContract, ...] = ()
    lines: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_list(self) -> list[dict]:
        """manifest.json's ``input_contract``."""
        return [c.to_dict() for c in self.contracts]


@dataclass
class ProbeSetup:
    """What measuring needs: labelled image folder, a reference runner factory, the class mapping."""

    data: Path
    runner: Callable[[], Callable[[dict], dict]]
    width: int
    index_for: Callable[[tuple], np.ndarray | None] = lambda names: None  # folder classes -> output indices
    seed: int = 0
    _run: Callable | None = field(default=None, repr=False)

    def predict(self, feeds: dict) -> dict:
        """Run the reference (loaded on first use)."""
        if self._run is None:
            self._run = self.runner()
        return self._run(feeds)


def _named(c: ImageContract) -> str:
    return c.named_range() or "given"


def resolve(
    signature,
    model: Path,
    saved_model: Path | None,
    options: ContractOptions,
    data: Path | None = None,
    probe: ProbeSetup | None = None,
    metadata: tuple | None = None,
) -> Resolution:
    """The input contract of every image input of ``signature``.

    ``data`` is the image data the contract will read (a folder means pixels must be fed right, so a model that
    does not say is measured on it or refused); ``probe`` makes the measurement possible (labelled folder + a
    reference); ``metadata`` is (mean, std, origin) read from an artefact's embedded metadata.
    """
    images = [(s, c) for s in signature.inputs for c in [image_contract(s)] if c is not None]
    contracts, lines, warnings = [], [], []
    for spec, base in images:
        chosen = _without_data(spec, base, model, saved_model, options, len(images), metadata)
        result = None
        if probe is not None and len(images) == 1:
            extra = {"given": (chosen.mean, chosen.std)} if chosen is not None and _named(chosen) == "given" else {}
            try:
                result = run_probe(
                    base, spec, probe.data, probe.predict, probe.width, probe.index_for, probe.seed, extra
                )
            except DataError as exc:
                if chosen is None:  # nothing says how pixels are scaled, and this folder cannot measure it
                    raise DataError(
                        f"{exc} The folder was read to measure how input {spec.name!r} expects its "
                        f"pixels scaled, since the model does not say; or say it with {OPTION_HINT}."
                    ) from None
                # the folder's classes do not map onto the outputs: no check possible, the chosen contract stands
        if chosen is None:
            chosen = _measured(base, spec, result, options, data)
        elif result is not None:
            name = _named(chosen)
            better = result.far_better(name)
            if better:
                warnings.append(
                    f"input {spec.name!r}: the reference does clearly better under {_how(better)} than under "
                    f"the {chosen.source}'s {chosen.describe()} ({result.evidence(better)}); "
                    f"check {_fix(chosen)}."
                )
            chosen = chosen if chosen.source == "probe" else _with_check(chosen, result, name)
        contracts.append(chosen)
        lines.append(f"input {spec.name!r}: {chosen.describe()} [{chosen.source}: {chosen.evidence}]")
        if chosen.source == "default" and image_data(data):
            warnings.append(default_warning(spec.name))
    return Resolution(tuple(contracts), tuple(lines), tuple(warnings))


def image_data(data: Path | None) -> bool:
    """True for sources holding encoded images: a folder, or a TFRecord (which may)."""
    return data is not None and (
        Path(data).is_dir() or Path(data).suffix.lower() in (".tfrecord", ".tfrecords", ".tfr")
    )


def default_warning(name: str) -> str:
    """The warning for an image input nothing describes (fed, described and shown as raw 0..255)."""
    return (
        f"input {name!r}: nothing says how its pixels are scaled, so images are fed (and metadata and the page "
        f"describe them) as raw 0..255 values; if the model was trained on scaled input, pass {OPTION_HINT}."
    )


def _without_data(
    spec,
    base: ImageContract,
    model: Path,
    saved_model: Path | None,
    options: ContractOptions,
    n_images: int,
    metadata: tuple | None,
) -> ImageContract | None:
    """The option, else what the model declares, else embedded metadata; None when all are silent."""
    if options.explicit:
        mean, std = options.normalization()
        if len(mean) not in (1, base.channels) or len(std) not in (1, base.channels):
            raise DataError(
                f"{options.flag()} gives {max(len(mean), len(std))} values, but input {spec.name!r} has "
                f"{base.channels} channel(s); give 1 value or {base.channels}."
            )
        return base.with_normalization(mean, std, "option", f"set by {options.flag()}")
    found = declared(base, spec, model, saved_model, n_images)
    if found is None and metadata is not None:
        found = from_metadata(base, *metadata)
    return found


def _measured(
    base: ImageContract, spec, result: ProbeResult | None, options: ContractOptions, data: Path | None
) -> ImageContract:
    """The probe's clear winner; DataError when there is none or nothing to measure on image data."""
    if result is not None:
        winner = result.clear_winner()
        if winner is None:
            raise DataError(
                f"cannot tell what input {spec.name!r} takes: the model does not say (no Rescaling/"
                f"Normalization layer or constant scaling at its input, no metadata) and no normalization "
                f"is clearly best for the reference ({result.evidence()}; a pick needs "
                f"{result.floor:.0%} and a lead of {result.margin:.0%}). Set it with {OPTION_HINT}."
            )
        mean, std = RANGES[winner]
        return base.with_normalization(mean, std, "probe", result.evidence(winner))
    if data is not None and Path(data).is_dir():
        raise DataError(
            f"cannot tell what input {spec.name!r} takes: the model does not say (no Rescaling/"
            f"Normalization layer or constant scaling at its input, no metadata) and {data} has no class "
            f"sub-folders to measure the reference on. Set it with {OPTION_HINT}."
        )
    return base


def _with_check(c: ImageContract, result: ProbeResult, name: str) -> ImageContract:
    score = result.scores.get(name)
    if score is None:
        return c
    return c.with_normalization(
        c.mean, c.std, c.source, f"{c.evidence}; checked: reference {score:.0%} on {result.n} labelled images"
    )


def _how(name: str) -> str:
    return f"--input-range {name}"


def _fix(c: ImageContract) -> str:
    return (
        "the --input-* option"
        if c.source == "option"
        else "the model's preprocessing (or override it with --input-range)"
    )
