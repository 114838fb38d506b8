"""The options of ``convert --quant auto``: the candidates' ConvertConfig plus the budget and how to measure it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.enums import Objective
from edge_tool.convert.source import is_keras_file
from edge_tool.convert.tflite_source import is_tflite_source
from edge_tool.device.url import DeviceURL
from edge_tool.errors import UsageError, below_minimum, collect_and_raise

SELECTIVE = "int8-selective"
INTEGER_ONLY = "integer-only"
REQUIREMENTS = {
    INTEGER_ONLY: "only candidates that run on TFLite Micro, the Edge TPU and integer NPUs: every "
    "computed tensor 8-bit (int32 biases), no float op apart from the float I/O's "
    "QUANTIZE/DEQUANTIZE, no custom/Flex op"
}
# --require's choices, derived from REQUIREMENTS (a str Enum, so Typer lists and validates them)
Requirement = Enum("Requirement", [(k.upper().replace("-", "_"), k) for k in REQUIREMENTS], type=str, module=__name__)
Requirement.__doc__ = "A --require value: a key of REQUIREMENTS."


@dataclass(frozen=True)
class AutoConfig:
    """Options of ``convert --quant auto``; validated on construction (all of its own problems at once).

    ``convert`` is the run that builds the candidates: its model, output directory (the final OUTDIR), calibration,
    samples, training data, seed, batch and force; its modes are ``convert.modes.auto_candidates`` and it keeps
    going when a mode fails (the mode becomes a failed row).
    """

    convert: ConvertConfig
    max_drop: float
    eval_data: Path
    objective: Objective = Objective.SIZE
    threads: int = 1
    max_float_layers: int = 3
    reference: Path | None = None  # the SavedModel measured against (run_auto sets it; a Keras file is exported once)
    require: str | None = None  # a key of REQUIREMENTS: candidates that do not meet it are not chosen
    device: str | None = None  # --device ssh://...: the candidates are measured (accuracy and latency) on that board
    device_url: DeviceURL | None = field(default=None, init=False, repr=False, compare=False)  # device, parsed

    def __post_init__(self) -> None:
        object.__setattr__(self, "eval_data", Path(self.eval_data))
        object.__setattr__(self, "require", getattr(self.require, "value", self.require))  # a Requirement member
        problems = []
        try:
            object.__setattr__(self, "objective", Objective(self.objective))
        except ValueError:
            problems.append(f"--objective expects size or latency, got {self.objective!r}.")
        if not 0 <= self.max_drop <= 1:
            problems.append(f"--max-drop is a fraction in [0, 1] (0.01 = 1 point), got {self.max_drop}.")
        problems += below_minimum({"--threads": (self.threads, 1), "--max-float-layers": (self.max_float_layers, 0)})
        if not (self.model.is_dir() or is_keras_file(self.model) or is_tflite_source(self.model)):
            problems.append(
                f"--quant auto measures against the model as reference, so MODEL must be a SavedModel "
                f"directory, a .keras/.h5 file or a float .tflite; {self.model} is none of them."
            )
        if self.require is not None and self.require not in REQUIREMENTS:
            problems.append(f"--require expects {', '.join(REQUIREMENTS)}, got {self.require!r}.")
        if self.device is not None:
            try:
                object.__setattr__(self, "device_url", DeviceURL.parse(self.device))
            except UsageError as exc:
                problems.append(str(exc))
        if not self.eval_data.exists():
            problems.append(f"--eval-data {self.eval_data} does not exist.")
        collect_and_raise(problems, UsageError, "Invalid --quant auto options:")

    @property
    def reference_model(self) -> Path:
        """The SavedModel the candidates are measured against: ``reference`` when set, else the model."""
        return self.reference if self.reference is not None else self.model

    @property
    def model(self) -> Path:
        """The reference SavedModel every candidate is converted from and measured against."""
        return self.convert.model

    @property
    def output_dir(self) -> Path:
        """OUTDIR."""
        return self.convert.output_dir

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the output must stay clear of (fsutil.check_not_input)."""
        c = self.convert
        return (
            ("model", c.model),
            ("eval data", self.eval_data),
            ("calibration data", c.calibration),
            ("training data", c.train_data),
        )

    @property
    def modes(self) -> tuple[str, ...]:
        """The plain candidates, in build order."""
        return tuple(m.value for m in self.convert.modes)
