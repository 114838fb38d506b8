"""Frozen configuration for ``edgetool convert``: modes, formats, I/O types, and the validated config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.safe_open import not_a_file
from edge_tool.calibration.serial import Record
from edge_tool.contract.options import ContractOptions
from edge_tool.convert.enums import IOType, TfjsQuant
from edge_tool.convert.formats import FORMATS, OutputFormat, formats_for, honoured, options_not_taken
from edge_tool.convert.modes import MODES, QuantMode
from edge_tool.convert.tflite_source import is_tflite_source, tflite_source_problems
from edge_tool.errors import UsageError, below_minimum, collect_and_raise
from edge_tool.qat.enums import QatStrategy
from edge_tool.qat.source import keras3_file_problem

__all__ = ["ConvertConfig", "IOType", "OutputFormat", "QuantMode", "TfjsQuant"]


@dataclass(frozen=True)
class ConvertConfig(Record):
    """Everything a conversion run needs; validated on construction (all problems reported at once). ``to_dict``
    (the serializer's) is manifest.json's ``options``."""

    model: Path
    output_dir: Path
    modes: tuple[QuantMode, ...] = (QuantMode.FP32,)
    output_format: OutputFormat = OutputFormat.TFLITE
    calibration: Path | None = None
    samples: int = 200
    io_type: IOType = IOType.MODEL
    train_data: Path | None = None
    eval_data: Path | None = None  # qat: labelled held-out data QAT and int8 PTQ are compared on
    qat_epochs: int = 3
    strategy: str = "default"
    replicas: int = 2
    # format -> the options record of that format (FormatSpec.options, e.g. {"tfjs": TfjsOptions(TfjsQuant.UINT8)});
    # filled with defaults for every format this run builds that takes options; formats.format_options makes it
    format_options: dict = field(default_factory=dict)
    allow_select_tf_ops: bool = False
    batch: int | None = None  # fix the input batch (re-traced signature); None keeps the model's own
    signature: str | None = None  # the SavedModel signature converted; None = serving_default
    seed: int = 0
    force: bool = False
    keep_going: bool = False  # a mode that fails is recorded (manifest "failed") instead of failing the run
    labels: Path | None = None  # class labels to embed; default: labels.txt beside the SavedModel
    metadata: bool = True  # embed TFLite model metadata and TFJS userDefinedMetadata
    input_range: str | None = None  # the input contract's normalization by name (--input-range), see contract.options
    input_mean: tuple[float, ...] | None = None  # model input = (pixel - mean) / std (calibration, eval, metadata)
    input_std: tuple[float, ...] | None = None
    trust_model_code: bool = False  # --trust-model-code: run a model that carries code (edge_tool.trust)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", Path(self.model))
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "modes", tuple(dict.fromkeys(QuantMode(m) for m in self.modes)))
        object.__setattr__(self, "output_format", OutputFormat(self.output_format))
        object.__setattr__(self, "io_type", IOType(self.io_type))
        given = dict(self.format_options or {})
        filled, bad_options = self._filled(given)
        object.__setattr__(self, "format_options", filled)
        for name in ("input_mean", "input_std"):
            value = getattr(self, name)
            object.__setattr__(self, name, tuple(float(v) for v in value) if value is not None else None)
        for name in ("calibration", "train_data", "eval_data", "labels"):
            value = getattr(self, name)
            object.__setattr__(self, name, Path(value) if value is not None else None)
        problems = bad_options + self._options_problems(given) + self._problems()
        collect_and_raise(problems, UsageError, header="Invalid convert options:")

    def _filled(self, given: dict) -> tuple[dict, list[str]]:
        """Each built format's options record (the one given, as a record or its fields in a dict, else the
        defaults), and the problems with the ones given."""
        out, problems = {}, []
        for name in self.formats:
            record, value = FORMATS[name].options, given.get(name)
            if record is None or isinstance(value, record):
                out.update({name: value} if record is not None else {})
                continue
            try:
                out[name] = record(**(value or {}))
            except (TypeError, ValueError) as exc:  # an unknown option name, a value its type does not take
                flags = ", ".join(row.flag for row in FORMATS[name].option_rows)
                problems.append(f"--format {name}'s options ({flags}) do not take {value!r}: {exc}.")
        return out, problems

    def _options_problems(self, given: dict) -> list[str]:
        unknown = [name for name in given if name not in FORMATS or FORMATS[name].options is None]
        if unknown:
            return [f"format_options names {', '.join(map(repr, unknown))}, which take no options."]
        names = [row.name for name in given if name not in self.formats for row in FORMATS[name].option_rows]
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        names += [name for name in honoured() if getattr(self, name) != defaults[name]]  # e.g. --io-type with tfjs
        return options_not_taken(self.output_format, names)

    def _problems(self) -> list[str]:
        if is_tflite_source(self.model):
            return below_minimum({"--samples": (self.samples, 1)}) + tflite_source_problems(self)
        problems = below_minimum(
            {"--samples": (self.samples, 1), "--qat-epochs": (self.qat_epochs, 1), "--replicas": (self.replicas, 1)}
        )
        if self.batch is not None:
            problems += below_minimum({"--batch": (self.batch, 1)})
            if QuantMode.QAT in self.modes and self.runs_mode_builds:
                problems.append(
                    "--batch does not apply to --quant qat (it fine-tunes and converts the Keras model "
                    "itself); convert qat without --batch, or the other modes with it."
                )
        if QuantMode.QAT in self.modes and self.runs_mode_builds and not self.keep_going:
            problems += [p for p in (keras3_file_problem(self.model),) if p]  # before the model's long load
        strategies = [s.value for s in QatStrategy]
        if self.strategy not in strategies:
            problems.append(f"--strategy for QAT must be one of {', '.join(strategies)}, got {self.strategy!r}.")
        problems += self._metadata_problems()
        if self.builds_modes and not self.modes:
            problems.append("no --quant mode given.")
        for spec in (FORMATS[name] for name in self.formats):
            problems += [p for p in (spec.missing_extra(),) if p] + spec.problems(self)
        for mode in self.modes if self.runs_mode_builds else ():
            spec = MODES[mode]
            if self.io_type.value not in spec.io_types:
                problems.append(
                    f"--io-type {self.io_type.value} is not possible with --quant {mode.value} "
                    f"(allowed: {', '.join(spec.io_types)})."
                )
            if spec.needs_train_data and self.train_data is None:
                problems.append(f"--quant {mode.value} needs --train-data (an .npz with x and y) to fine-tune on.")
        if self.eval_data is not None and not (self.runs_mode_builds and QuantMode.QAT in self.modes):
            problems.append(
                "--eval-data belongs to --quant qat (QAT vs int8 PTQ) and --quant auto; evaluate other "
                "modes with edgetool eval."
            )
        return problems

    def _metadata_problems(self) -> list[str]:
        problems = []
        if not self.metadata and self.labels is not None:
            problems.append("--labels are embedded as metadata; drop --no-metadata to use them.")
        if self.labels is not None and not_a_file(self.labels) is not None:
            problems.append(f"--labels {self.labels} {not_a_file(self.labels)} (expected one label per line).")
        try:
            ContractOptions(self.input_range, self.input_mean, self.input_std)
        except UsageError as exc:
            problems += [line.removeprefix("- ") for line in str(exc).splitlines()[1:]] or [str(exc)]
        return problems

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the output must stay clear of (fsutil.check_not_input)."""
        return (
            ("model", self.model),
            ("calibration data", self.calibration),
            ("training data", self.train_data),
            ("eval data", self.eval_data),
            ("labels", self.labels),
        )

    @property
    def formats(self) -> tuple[str, ...]:
        """The registered formats this run builds, in build order (``formats.formats_for``)."""
        return formats_for(self.output_format.value)

    def wants(self, name: str) -> bool:
        """True when format ``name`` (a key of ``formats.FORMATS``) is built by this run."""
        return name in self.formats

    @property
    def runs_mode_builds(self) -> bool:
        """True when a format of this run is built by the mode registry (``FormatSpec.mode_builds``: tflite)."""
        return any(FORMATS[name].mode_builds for name in self.formats)

    @property
    def builds_modes(self) -> bool:
        """True when a format of this run is built once per --quant mode."""
        return any(FORMATS[name].per_mode for name in self.formats)
