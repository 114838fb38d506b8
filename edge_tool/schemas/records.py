"""The parts of manifest.json whose shape is fixed, as frozen dataclasses the builders make and the serializer
(``calibration.serial``) writes: the tool, the source model and its fixed batch, and an artefact entry's tfjs
files, metadata summary, self-check, int16x8 and fixed-batch notes and TFLite Micro export. Light (no numpy): the
format and mode modules, which ``--help`` reads, import it at their top; the calibration record, which carries
calibration's numpy-backed summary, is ``manifest.CalibrationRecord``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from edge_tool.calibration.serial import Record, spec
from edge_tool.calibration.spec import SignatureInfo

ARENA_MARGIN = 0.25  # added to the measured minimum (edge_tool.micro.tflm.recommended_arena)


@dataclass(frozen=True)
class ToolInfo(Record):
    """The program that wrote the file."""

    name: str
    version: str


@dataclass(frozen=True)
class FixedBatch(Record):
    """``--batch``: the batch, how it was fixed (``keras``, ``keras3`` or ``signature``: edge_tool.models.fixed_batch),
    the recurrent layers unrolled, and the re-traced signature."""

    batch: int
    method: str
    unrolled: tuple[str, ...]
    signature: SignatureInfo


@dataclass(frozen=True)
class PrecisionCast(Record):
    """manifest.json's ``source.precision``: the model computed in ``dtype`` (``ops``: the compute ops that did);
    every artefact was built from its float32 recast (``method``: ``graph`` or ``keras``), whose outputs differ
    from the model's by at most ``max_abs_diff`` (``relative``: over the output's range) on ``samples`` seeded
    random inputs; ``why`` in one sentence."""

    dtype: str
    ops: tuple[str, ...]
    method: str
    samples: int
    max_abs_diff: float
    relative: float
    why: str


@dataclass(frozen=True)
class SourceRecord(Record):
    """The model as given (``signature`` is the model's own, before --batch)."""

    path: str
    kind: str
    flavor: str
    sha256: str
    signature: SignatureInfo
    fixed_batch: FixedBatch | None
    precision: PrecisionCast | None = field(default=None, metadata=spec(omit="none"))
    # a Keras file's layers active in training only (random augmentation), left out of its export: "name (Class)"
    inference_only: tuple[str, ...] | None = field(default=None, metadata=spec(omit="none"))


@dataclass(frozen=True)
class FileEntry(Record):
    """One file of a directory artefact (tfjs)."""

    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Normalization(Record):
    """model input = (pixel - mean) / std."""

    mean: tuple[float, ...]
    std: tuple[float, ...]


@dataclass(frozen=True)
class MetadataRecord(Record):
    """The TFLite model metadata embedded: model fields, the number of labels and their file, the normalization."""

    name: str
    description: str
    version: str
    author: str
    labels: int
    labels_file: str | None
    normalization: Normalization


def _finite_or_null(value: float):
    return value if math.isfinite(value) else None


def _null_as_inf(value):
    return math.inf if value is None else value


STREAM_INPUTS = "seeded random stream"  # a model with state: the probes as one stream of calls, compared call by call


@dataclass(frozen=True)
class SelfCheck(Record):
    """The float .tflite against the SavedModel on ``samples`` seeded random input batches (``max_abs_error`` is
    written as null when NaN/Inf, and read back as inf); ``inputs`` is ``STREAM_INPUTS`` for a model with state:
    the batches are one stream of calls, each side from its initial state, compared call by call."""

    inputs: str = field(default="seeded random", kw_only=True)
    samples: int
    max_abs_error: float = field(metadata=spec(encode=_finite_or_null, decode=_null_as_inf))
    tolerance: float
    ok: bool

    def warning(self, name: str, mode: str) -> str:
        """What the terminal says when the check failed."""
        error = f"max abs error {self.max_abs_error:.3g}" if math.isfinite(self.max_abs_error) else "NaN/Inf outputs"
        probes = (
            f"one stream of {self.samples} seeded random calls from the initial state, compared call by call"
            if self.inputs == STREAM_INPUTS
            else f"{self.samples} seeded random inputs"
        )
        return (
            f"{name} does not compute what the SavedModel computes: {error} on "
            f"{probes}, where float rounding explains at most {self.tolerance:.3g} "
            f"({mode}). That is a TensorFlow tflite_converter/LiteRT kernel problem with this model. Measure it on real "
            "data with edgetool eval before shipping it; --batch 1 (fixed shapes) or another --quant mode may "
            "avoid it."
        )


@dataclass(frozen=True)
class Int16x8Note(Record):
    """int16x8 with ops that have no 16x8 kernel kept in float: which ops, and why."""

    float_ops: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class BatchNote(Record):
    """The artefact was built from a re-trace with the input batch fixed, because LiteRT refused the free batch."""

    batch: int
    reason: str


@dataclass(frozen=True)
class Resolver(Record):
    """The generated TFLM op resolver: its C++ class and the Add* methods it calls."""

    class_name: str = field(metadata=spec("class"))
    methods: tuple[str, ...]


@dataclass(frozen=True)
class ArenaSize(Record):
    """The measured tensor arena: smallest that works, what TFLM recorded there, the recommendation with margin
    (measured by edge_tool.micro.tflm.measure_arena)."""

    minimum_bytes: int
    recorded_bytes: int | None
    recommended_bytes: int
    margin: float = ARENA_MARGIN
    method: str = "binary search over TFLM's Python interpreter (allocate + invoke), 16-byte steps"


@dataclass(frozen=True)
class MicroRecord(Record):
    """``--format micro``: the C sources written (names in the output directory), the ops and their resolver, the
    measured tensor arena, the model array's flash bytes, and the TFLM version measured with."""

    files: tuple[str, ...]
    ops: tuple[str, ...]
    resolver: Resolver
    tensor_arena: ArenaSize
    flash_bytes: int
    flash_note: str = "the model array only; add the TFLM library and your application"
    tflite_micro: str = "not installed"
