"""What a conversion feeds and tells: the input contract (resolved once), the calibration data read through it,
the labels (given, beside the model, or the calibration folder's classes) and the metadata built from both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from edge_tool import calibration
from edge_tool.calibration.contract import ImageContract
from edge_tool.contract.options import ContractOptions
from edge_tool.contract.resolve import ProbeSetup, Resolution, default_warning, image_data, resolve
from edge_tool.convert.metadata_step import check_labels, metadata_spec
from edge_tool.convert.modes import MODES
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import UsageError
from edge_tool.litert.recipes import missing_calibration_message, resolve_calibration
from edge_tool.metadata.writer import MetadataSpec
from edge_tool.models.labelmap import class_width, folder_index_map, model_labels
from edge_tool.models.signature_choice import numeric_signature_way_out
from edge_tool.models.signatures import signature_runner
from edge_tool.qat.source import check_qat_source


@dataclass(frozen=True)
class ModelInputs:
    """The resolved contract, calibration data (None when no mode needs it), labels and metadata of one run."""

    resolution: Resolution
    dataset: object | None
    calibration_path: Path | None
    labels: tuple[str, ...]
    labels_origin: str
    metadata: MetadataSpec | None

    @property
    def contracts(self) -> tuple[ImageContract, ...]:
        """The input contract records."""
        return self.resolution.contracts


def _needs_calibration(config, qat_trained: bool = False) -> bool:
    """A mode of ``config`` calibrates (int8 not, on a model trained quantization-aware: its ranges are trained)."""
    calibrating = [m for m in config.modes if MODES[m].needs_calibration and not (qat_trained and m.value == "int8")]
    return config.builds_modes and bool(calibrating)


def contract_options(config) -> ContractOptions:
    """The --input-* options of a ConvertConfig."""
    return ContractOptions(config.input_range, config.input_mean, config.input_std)


def _probe(tf, config, source, data: Path | None, labels: list[str] | None, origin: str) -> ProbeSetup | None:
    width = class_width(source.signature)
    if data is None or not Path(data).is_dir() or width is None:
        return None

    return ProbeSetup(
        Path(data),
        lambda: signature_runner(tf, source.saved_model, source.signature.key)[0],
        width,
        lambda names: folder_index_map(names, labels, width, data, origin)[0],
        config.seed,
    )


def _string_inputs(source) -> list[str]:
    return [t.name for t in source.signature.inputs if t.dtype in ("string", "object", "bytes")]


def _string_calibration_message(modes: str, model, strings: list[str], signature: str | None = None) -> str:
    named = f"--quant {modes}: input {', '.join(map(repr, strings))} of {model} is a string tensor"
    if other := numeric_signature_way_out(model, signature):  # a TF-Serving export's pixel signature: that one
        return f"{named}, which the integer modes cannot calibrate (string ops have no integer form).{other}"
    why = (
        f"{named}, and the integer modes quantize every op through calibration — string ops (tokenizing, lookups, "
        "image decoding) have no integer form in TFLite (the raw converter fails on them too)."
    )
    return why + (
        " Use --quant fp32, fp16 or dynamic with --allow-select-tf-ops (the string ops then run as TF Flex ops; the "
        "app needs the Flex delegate), or keep the string preprocessing outside the model and quantize the numeric "
        "part."
    )


def refuse_string_calibration(config, source) -> None:
    """UsageError for a mode that calibrates (int8, int16x8) when an input is a string tensor: there is no integer
    form of string ops (the raw converter fails on them too), whatever data is given."""
    if strings := _string_inputs(source):
        if any(m.value == "qat" for m in config.modes):
            check_qat_source(Path(config.model))  # no Keras layers to fine-tune is the first cause, whatever the input
        modes = ", ".join(m.value for m in config.modes if MODES[m].needs_calibration)
        raise UsageError(_string_calibration_message(modes, config.model, strings, config.signature))


def drop_string_calibration(config, source) -> tuple[object, dict[str, str]]:
    """With several modes asked for (``keep_going``: --quant all, a list, auto's candidates) and a string input, the
    modes that calibrate cannot be built but the float ones can: (the config without them, {mode: why not})."""
    strings = _string_inputs(source)
    calibrated = [m for m in config.modes if MODES[m].needs_calibration]
    if not (strings and calibrated and config.keep_going) or len(calibrated) == len(config.modes):
        return config, {}
    why = _string_calibration_message(", ".join(m.value for m in calibrated), config.model, strings, config.signature)
    kept = tuple(m for m in config.modes if m not in calibrated)
    eval_data = config.eval_data if any(m.value == "qat" for m in kept) else None  # --eval-data belongs to qat
    return dataclasses.replace(config, modes=kept, eval_data=eval_data), {
        m.value: " ".join(why.split()) for m in calibrated
    }


def prepare_inputs(tf, config, source, qat_trained: bool = False) -> ModelInputs:
    """Resolve the contract, load the calibration data through it, settle the labels; print what was decided.
    ``qat_trained``: the model holds trained FakeQuant ranges, so int8 needs no calibration."""
    labels, origin = model_labels(config.model, config.labels)
    ignored = check_labels(tuple(labels or ()), origin, config, source)
    if ignored:
        console.print(f"note: {term(ignored)}")
        labels, origin = None, ""
    needed = _needs_calibration(config, qat_trained)
    if needed:
        refuse_string_calibration(config, source)
    path = resolve_calibration(config.model, config.calibration) if needed or config.calibration else None
    if needed and path is None:
        modes = ", ".join(m.value for m in config.modes if MODES[m].needs_calibration)
        raise UsageError(missing_calibration_message(f"--quant {modes}", config.model))
    resolution = resolve(
        source.signature,
        config.model,
        source.saved_model,
        contract_options(config),
        path,
        _probe(tf, config, source, path, labels, origin),
    )
    spec_default = [c for c in resolution.contracts if c.source == "default"]
    for c, line in zip(resolution.contracts, resolution.lines):
        if c.source != "default" or image_data(path):  # what nothing decided and nothing reads is not news
            console.print(f"input contract: {term(line)}")
    for warning in resolution.warnings:
        console.print(f"[yellow]warning:[/] {term(warning)}")
    ds = _load(config, source, path, resolution.contracts) if path is not None else None
    width = class_width(source.signature)
    if not labels and ds is not None and ds.class_names and len(ds.class_names) == width:
        labels, origin = list(ds.class_names), f"the class folders of {path}"
    if labels:
        console.print(f"labels: {len(labels)} from {term(origin)}")
    elif config.metadata and width is not None:
        console.print(
            "labels: none (no --labels, no labels.txt in or beside the model, no class folders in the "
            "calibration data): the artefacts' outputs carry class indices only."
        )
    spec = metadata_spec(config, source, tuple(labels or ()), resolution.contracts)
    if spec is not None and not image_data(path):
        for c in spec_default:
            if c.layout != "NHW":  # a [N, T, F] sequence is no picture; a [N, H, W, C] float input may well be
                console.print(f"[yellow]warning:[/] {term(default_warning(c.input))}")
    return ModelInputs(resolution, ds if needed else None, path if needed else None, tuple(labels or ()), origin, spec)


def _load(config, source, path: Path, contracts: tuple):
    # text read as text: a string input's data reaches here only for the float modes (refuse_string_calibration
    # stops a calibrating mode first), whose run reads labels and the run-check's sample from it
    specs = calibration.specs_from(source.signature.inputs, text=True)
    options = calibration.LoadOptions(samples=config.samples, seed=config.seed, images=contracts, text=True)
    ds = calibration.load(path, specs, options)
    for warning in ds.warnings:
        console.print(f"[yellow]warning:[/] {term(warning)}")
    console.print(f"calibration: {term(calibration_line(ds.summary, contracts))}")
    return ds


def calibration_line(summary, contracts: tuple) -> str:
    """One line: source, samples used of how many, per-class counts, the value range fed, the preprocessing."""
    used = f"{summary.n_selected} of {summary.n_available} samples ({summary.sampling}, seed {summary.seed})"
    counts = ""
    if summary.class_counts:
        shown = list(summary.class_counts.items())
        counts = ", per class " + ", ".join(f"{k} {v}" for k, v in shown[:10]) + (", ..." if len(shown) > 10 else "")
    fed = "; ".join(f"{name} {st.min:.4g}..{st.max:.4g} {st.dtype}" for name, st in summary.inputs.items())
    prep = "; ".join(f"{c.input}: {c.describe()}" for c in contracts) or "arrays fed as stored (no image decoding)"
    if summary.format not in ("image-folder", "tfrecord"):
        prep = "arrays fed as stored (no image decoding)"
    return f"{summary.source} ({summary.format}), {used}{counts}; fed {fed}; preprocessing {prep}"
