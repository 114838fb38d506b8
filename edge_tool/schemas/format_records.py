"""The records of manifest.json that belong to one output format, each declared beside the others here (light:
stdlib and the serializer only, so a format module imports them at its top): onnx's and tfjs's ``agreement`` (the
file in its own runtime against TensorFlow) and onnx int8's ``quantization``. ``AGREEMENT`` says which record an
entry of each format carries; ``manifest.ManifestArtifact`` reads it back by the entry's ``format``."""

from __future__ import annotations

from dataclasses import dataclass, field

from edge_tool.calibration.serial import Record, spec


def _measured(record) -> bool:
    return record.measured


_FIGURES = ("max_abs_error", "tolerance", "ok", "top1_agreement")


def _has_figures(data: dict) -> bool:
    return any(key in data for key in _FIGURES)


_MEASURED = spec(when=_measured)
# True when outputs were compared (set by the builder, or by any figure given): then every figure is written, null
# where there is none (int8's unjudged tolerance and ok); read back from whether the file has figures, so a record
# written without them is read and written back as it was
_MEASURED_FLAG = spec(write=False, read=_has_figures)


class _Figures:
    """``measured`` follows the figures: a record holding one is a measured one."""

    __slots__ = ()

    def __post_init__(self) -> None:
        if any(getattr(self, name, None) is not None for name in _FIGURES):
            object.__setattr__(self, "measured", True)


@dataclass(frozen=True)
class OnnxAgreement(_Figures, Record):
    """--format onnx's self-check: the file in ONNX Runtime (CPU) against the SavedModel on ``samples`` inputs
    (``calibration`` samples, else ``seeded random`` probes). fp32 is judged against float rounding (``ok``); int8
    is measured, not judged (``tolerance`` and ``ok`` None). ``checked`` False: nothing compared, ``reason`` why."""

    inputs: str
    samples: int
    checked: bool
    reason: str | None = field(default=None, metadata=spec(omit="none"))
    max_abs_error: float | None = field(default=None, metadata=_MEASURED)  # None: NaN/Inf outputs
    tolerance: float | None = field(default=None, metadata=_MEASURED)
    ok: bool | None = field(default=None, metadata=_MEASURED)
    top1_agreement: float | None = field(default=None, metadata=_MEASURED)  # None: no [batch, classes] output
    measured: bool = field(default=False, metadata=_MEASURED_FLAG)


@dataclass(frozen=True)
class TfjsAgreement(_Figures, Record):
    """--format tfjs's self-check: the graph model in tfjs in Node (``runtime``: its backend) against TensorFlow on
    ``samples`` seeded random inputs, judged against float rounding (a file that fails is not written);
    ``checked`` False with a ``reason`` when it was skipped (no Node, an input no random probe fits)."""

    inputs: str
    samples: int
    checked: bool
    reason: str | None = field(default=None, metadata=spec(omit="none"))
    max_abs_error: float | None = field(default=None, metadata=_MEASURED)  # None: NaN/Inf outputs
    tolerance: float | None = field(default=None, metadata=_MEASURED)
    ok: bool | None = field(default=None, metadata=_MEASURED)
    runtime: str | None = field(default=None, metadata=spec(omit="none"))
    measured: bool = field(default=False, metadata=_MEASURED_FLAG)


@dataclass(frozen=True)
class OnnxQuantization(Record):
    """--format onnx int8: how ONNX Runtime's quantize_static quantized it, on ``samples`` calibration samples."""

    samples: int
    format: str = "QDQ"
    activations: str = "int8"
    weights: str = "int8, per channel, symmetric"
    calibration: str = "MinMax"
    json_order = ("format", "activations", "weights", "calibration")


@dataclass(frozen=True)
class QuantizerNote(Record):
    """A .tflite built by ai-edge-quantizer (a float .tflite source, or a weight-only mode): the recipe (its own JSON,
    replayable), the ops given integer weights, the ops whose weights stayed float, and that the file changed."""

    recipe: str
    quantizer: str
    changed: bool
    quantized_ops: dict
    float_ops: dict
    source_bytes: int
    aeq_recipe: list


# the agreement record an entry carries, by the entry's format (read back by ManifestArtifact)
AGREEMENT = {"onnx": OnnxAgreement, "tfjs": TfjsAgreement}


@dataclass(frozen=True)
class LmSelfCheck(Record):
    """A language model's self-check: ``prompt`` seeded tokens through the file's prefill signatures (chunked), then
    ``decode_steps`` decode calls, the caches fed back call by call, in LiteRT against the SavedModel. Drifts are
    max |Δlogit| over the reference's logit scale (null: NaN/Inf); ``tolerance`` null: measured, not judged."""

    prompt: int
    decode_steps: int
    prefill_drift: float | None
    decode_drift: float | None
    argmax_agreement: float
    tolerance: float | None
    ok: bool
    problem: str | None = field(default=None, metadata=spec(omit="none"))


@dataclass(frozen=True)
class LmArtifact(Record):
    """A language model's .tflite: its signatures, KV cache (shape of each of the 2 × layers tensors, and bytes at
    max_len), its size against the fp32 file, which ops got integer weights and which kept float ones, notes the
    run printed (e.g. the embedding GATHER left float) and the self-check."""

    signatures: tuple[str, ...]
    cache_shape: tuple[int, ...]
    cache_dtype: str
    cache_bytes: int
    size_ratio: float | None  # bytes / the fp32 file's bytes (None when fp32 was not built)
    quantized_ops: dict[str, int]
    float_ops: dict[str, int]
    self_check: LmSelfCheck
    notes: tuple[str, ...] = field(default=(), metadata=spec(omit="empty"))
    quantizer: dict | None = field(default=None, metadata=spec(omit="none"))  # ai-edge-quantizer's recipe + record
    perplexity: float | None = field(default=None, metadata=spec(omit="none"))  # --quant auto: on the held-out text
    perplexity_increase: float | None = field(default=None, metadata=spec(omit="none"))  # relative to fp32's
    litertlm: dict | None = field(default=None, metadata=spec(omit="none"))  # --litertlm: the bundle and its check
