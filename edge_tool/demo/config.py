"""What one ``edgetool demo`` run is asked to build, validated up front so nothing is written on bad input."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.safe_open import not_a_file
from edge_tool.contract.options import ContractOptions
from edge_tool.demo import model as model_mod
from edge_tool.errors import UsageError, collect_and_raise
from edge_tool.tasks import TASK_NAMES

MAX_TITLE = 80
MIN_RATE, MAX_RATE = 3000, 768000  # what WebAudio's OfflineAudioContext accepts
LM_TASK = "lm"  # the language-model page (demo.lm_site): a page of its own, not an eval task's rendering
DEMO_TASKS = (*TASK_NAMES, *(() if LM_TASK in TASK_NAMES else (LM_TASK,)))


@dataclass(frozen=True)
class DemoConfig:
    """Inputs of one ``edgetool demo`` run; validated up front so nothing is written on bad input."""

    model: Path
    output: Path
    labels: Path | None = None
    title: str | None = None
    force: bool = False
    litert: bool = False  # add the LiteRT.js engine (fixed-batch int8 .tflite built from the SavedModel, or tflite)
    tflite: Path | None = None  # a fixed-batch-1 .tflite to run with LiteRT.js instead of building one
    calibration: Path | None = (
        None  # int8 build data; a labelled image folder also measures the contract, names classes
    )
    input_size: str | None = None  # 'HxW' fed to image inputs whose height/width the model leaves open
    trust_model_code: bool = False  # --trust-model-code: build from a model that carries code (edge_tool.trust)
    contract: ContractOptions = ContractOptions()  # --input-range / --input-mean / --input-std
    signature: str | None = None  # the SavedModel signature the page runs; None = serving_default
    task: str | None = None  # --task: what the page renders the outputs as (None: inferred as eval infers it)
    sample_rate: int | None = None  # --sample-rate: Hz of a waveform input (the page resamples uploads to it)

    def __post_init__(self):
        problems = []
        if self.input_size is not None:
            try:
                model_mod.parse_input_size(self.input_size)
            except UsageError as exc:
                problems.append(str(exc))
        problems += [message for broken, message in self._checks() if broken]
        collect_and_raise(problems, UsageError, "edgetool demo cannot start:")

    def _checks(self) -> tuple[tuple[bool, str], ...]:
        """(broken?, message) per option rule, in the order the problems are listed."""
        title = len((self.title or "").strip())
        return (
            (
                self.tflite is not None and not_a_file(self.tflite) is not None,
                f"--tflite {self.tflite} {not_a_file(self.tflite)} (expected a fixed-batch-1 .tflite).",
            ),
            (
                self.calibration is not None and not Path(self.calibration).exists(),
                f"--calibration {self.calibration} does not exist.",
            ),
            (not self.litert and self.tflite is not None, "--tflite only applies with --litert."),
            (
                self.labels is not None and not_a_file(self.labels) is not None,
                f"--labels {self.labels} {not_a_file(self.labels)} (expected one label per line).",
            ),
            (
                self.title is not None and not 0 < title <= MAX_TITLE,
                f"--title must be 1..{MAX_TITLE} characters, got {title}.",
            ),
            (
                self.task is not None and self.task not in DEMO_TASKS,
                f"--task expects one of {', '.join(DEMO_TASKS)}, got {self.task!r}.",
            ),
            (
                self.sample_rate is not None and not MIN_RATE <= self.sample_rate <= MAX_RATE,
                f"--sample-rate must be {MIN_RATE}..{MAX_RATE} Hz (the rates browsers decode audio at), "
                f"got {self.sample_rate}.",
            ),
        )

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the site must stay clear of (fsutil.check_not_input)."""
        return (
            ("model", self.model),
            ("labels file", self.labels),
            ("--tflite model", self.tflite),
            ("calibration data", self.calibration),
        )
