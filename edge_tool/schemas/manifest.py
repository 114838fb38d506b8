"""``manifest.json`` as frozen dataclasses (nested records in ``schemas.records``); the serializer
(``calibration.serial``) writes the file's exact keys and order, and ``from_dict`` validates (schema
``manifest.schema.json``) before building."""

from __future__ import annotations

from dataclasses import dataclass, field

from edge_tool.calibration.contract import ImageContract
from edge_tool.calibration.dataset import CalibrationSummary
from edge_tool.calibration.serial import Record, from_dict, spec
from edge_tool.parsers.tflite_model import TfliteSummary
from edge_tool.parsers.tflite_state import ModelState
from edge_tool.schemas.convert_options import ConvertOptions
from edge_tool.schemas.document import Document
from edge_tool.schemas.format_records import (
    AGREEMENT,
    LmArtifact,
    OnnxAgreement,
    OnnxQuantization,
    QuantizerNote,
    TfjsAgreement,
)
from edge_tool.schemas.records import (
    BatchNote,
    FileEntry,
    Int16x8Note,
    MetadataRecord,
    MicroRecord,
    SelfCheck,
    SourceRecord,
    ToolInfo,
)

SCHEMA = "edgetool.convert/1"
FILE = "manifest.json"
_NONE = spec(omit="none")


def _tflite(entry: ManifestArtifact) -> bool:
    """A .tflite entry (the one kind that carries a tensor summary): it writes state_warning and metadata, null or
    not."""
    return entry.tensors is not None


def _agreement(data: dict) -> OnnxAgreement | TfjsAgreement | None:
    """The entry's ``agreement`` as the record of its format (``records.AGREEMENT``)."""
    raw = data.get("agreement")
    if raw is None:
        return None
    return from_dict(AGREEMENT.get(data.get("format"), OnnxAgreement), raw, "$.artifacts[].agreement")


@dataclass(frozen=True)
class CalibrationRecord(Record):
    """The representative data used: its path, then calibration's summary (written as the same object)."""

    path: str
    summary: CalibrationSummary = field(metadata=spec(flatten=True))


@dataclass(frozen=True)
class ManifestArtifact(Record):
    """One artefact entry; the tflite-only fields are None on the tfjs and onnx entries, and so on (``state_warning``
    and ``metadata`` are written, null or not, on tflite entries only)."""

    path: str
    format: str
    quant: str
    size_bytes: int
    sha256: str | None = field(default=None, metadata=_NONE)
    files: dict[str, FileEntry] | None = field(default=None, metadata=_NONE)
    seconds: float = field(kw_only=True)
    tensors: TfliteSummary | None = field(default=None, metadata=_NONE)
    state_warning: str | None = field(default=None, metadata=spec(when=_tflite))
    state: ModelState | None = field(default=None, metadata=_NONE)  # resource-variable state kept between calls
    metadata: MetadataRecord | None = field(default=None, metadata=spec(when=_tflite))
    self_check: SelfCheck | None = field(default=None, metadata=_NONE)
    self_check_skipped: str | None = field(default=None, metadata=_NONE)  # tflite: why it has no self_check
    qat: dict | None = field(default=None, metadata=_NONE)  # free-form: the decision plus the run's training notes
    int16x8: Int16x8Note | None = field(default=None, metadata=_NONE)
    micro: MicroRecord | None = field(default=None, metadata=_NONE)
    fixed_batch: BatchNote | None = field(default=None, metadata=_NONE)
    opset: int | None = field(default=None, metadata=_NONE)  # onnx: the ONNX opset of the default domain
    # onnx, tfjs: the file in its runtime vs TensorFlow (the record of its format: records.AGREEMENT)
    agreement: OnnxAgreement | TfjsAgreement | None = field(default=None, metadata=spec(omit="none", read=_agreement))
    quantization: OnnxQuantization | None = field(default=None, metadata=_NONE)  # onnx int8: how it was quantized
    lm: LmArtifact | None = field(default=None, metadata=_NONE)  # a language model's file (convert --task lm)
    quantizer: QuantizerNote | None = field(default=None, metadata=_NONE)  # built by ai-edge-quantizer: what it did


@dataclass(frozen=True)
class Manifest(Document):
    """What ``edgetool convert`` decided and made (schema ``edgetool.convert/1``)."""

    schema_name = "manifest"
    file_name = FILE

    schema: str
    tool: ToolInfo
    created: str
    source: SourceRecord
    options: ConvertOptions  # ConvertConfig's fields, typed: the recipe --from-manifest reruns (convert.recipe)
    calibration: CalibrationRecord | None
    artifacts: tuple[ManifestArtifact, ...]
    versions: dict[str, str | None]
    timings_s: dict[str, float]
    input_contract: tuple[ImageContract, ...] | None = field(default=None, metadata=_NONE)  # one per image input
    failed: dict[str, str] | None = field(default=None, metadata=_NONE)  # only when modes failed, the run kept going
    lm: dict | None = field(default=None, metadata=_NONE)  # --task lm: the edgetool_lm.json written beside the files
    lm_choice: dict | None = field(default=None, metadata=_NONE)  # --task lm --quant auto: what was chosen and why
    lm_options: dict | None = field(default=None, metadata=_NONE)  # --task lm: the LM run's own options

    @staticmethod
    def claims(doc) -> bool:
        """True when ``doc`` says it is an edgetool manifest (any version): a JSON object whose ``schema`` is
        ``edgetool.convert/…``. A manifest.json without that is another tool's file."""
        return (
            isinstance(doc, dict)
            and isinstance(doc.get("schema"), str)
            and doc["schema"].startswith("edgetool.convert/")
        )

    def artifact(self, name: str) -> ManifestArtifact | None:
        """The entry whose ``path`` is ``name`` (a file name in the manifest's directory), if any."""
        return next((a for a in self.artifacts if a.path == name), None)
