"""Read the metadata embedded in a .tflite, treating the file as hostile input.

Nothing is ever extracted to disk. Associated file names are checked to be plain file names, member sizes are
checked before reading (and reads are capped), labels must be UTF-8; every problem is reported in ``problems``
rather than raised, so ``inspect`` can still show the rest.
"""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass, field

from edge_tool.calibration.serial import Record
from edge_tool.errors import UsageError
from edge_tool.metadata import metadata_schema_py_generated as meta
from edge_tool.metadata.labels import MAX_LABELS_BYTES, parse_labels
from edge_tool.metadata.writer import METADATA_FIELD_NAME, METADATA_FILE_IDENTIFIER
from edge_tool.parsers.tflite_schema import tflite_schema
from edge_tool.schemas.records import Normalization

MAX_MEMBERS = 64
SHOW_LABELS = 5
_PARSE_ERRORS = (IndexError, struct.error, ValueError, TypeError, AttributeError, RecursionError, OverflowError)


@dataclass(frozen=True)
class TensorInfo(Record):
    """One tensor's metadata: name, description, content kind, normalization (mean, std) and its labels file."""

    name: str
    description: str
    content: str
    normalization: Normalization | None = None
    labels_file: str | None = None

    def stated_normalization(self) -> Normalization | None:
        """The normalization unless it is identity (mean 0, std 1: what older converters write by default)."""
        n = self.normalization
        if n is None or (all(m == 0 for m in n.mean) and all(s == 1 for s in n.std or (1,))):
            return None
        return n


@dataclass(frozen=True)
class EmbeddedMetadata(Record):
    """What a .tflite carries: model fields, per-tensor metadata, labels (if readable) and problems found; its JSON
    form (inspect's ``tflite.metadata``) has the labels in full and their count (``label_count``, derived)."""

    name: str = ""
    description: str = ""
    version: str = ""
    author: str = ""
    min_parser_version: str = ""
    inputs: tuple[TensorInfo, ...] = ()
    outputs: tuple[TensorInfo, ...] = ()
    packed_files: tuple[str, ...] = ()
    label_count: int = field(init=False)
    labels: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "label_count", len(self.labels))


def _text(value, what: str, problems: list[str]) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{what} is not valid UTF-8; shown with replacement characters.")
        return bytes(value).decode("utf-8", errors="replace")


def metadata_buffer(data: bytes) -> bytes | None:
    """The TFLITE_METADATA buffer of a .tflite (None if it has none); ValueError if the model table is unreadable."""
    schema = tflite_schema()
    model = schema.Model.GetRootAsModel(bytearray(data), 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if (entry.Name() or b"") == METADATA_FIELD_NAME.encode():
            index = entry.Buffer()
            if not 0 <= index < model.BuffersLength():
                raise ValueError(f"TFLITE_METADATA points at buffer {index} of {model.BuffersLength()}")
            buf = model.Buffers(index)
            if buf.DataLength() == 0:
                return None
            return buf.DataAsNumpy().tobytes()
    return None


def _tensor(meta, tm, problems: list[str]) -> TensorInfo:
    what = "tensor metadata"
    name = _text(tm.name, f"{what} name", problems)
    content = ""
    if tm.content is not None:
        kind = tm.content.contentPropertiesType
        content = {
            meta.ContentProperties.ImageProperties: "image",
            meta.ContentProperties.FeatureProperties: "feature",
            meta.ContentProperties.BoundingBoxProperties: "bounding box",
            meta.ContentProperties.AudioProperties: "audio",
        }.get(kind, f"content type {kind}")
        if kind == meta.ContentProperties.ImageProperties and tm.content.contentProperties is not None:
            space = {v: k for k, v in vars(meta.ColorSpaceType).items() if not k.startswith("_")}
            content += f" ({space.get(tm.content.contentProperties.colorSpace, '?')})"
    mean = std = None
    for unit in tm.processUnits or []:
        if unit.optionsType == meta.ProcessUnitOptions.NormalizationOptions and unit.options is not None:
            mean = tuple(float(v) for v in (unit.options.mean if unit.options.mean is not None else ()))
            std = tuple(float(v) for v in (unit.options.std if unit.options.std is not None else ()))
    labels_file = None
    for f in tm.associatedFiles or []:
        if f.type == meta.AssociatedFileType.TENSOR_AXIS_LABELS:
            labels_file = _text(f.name, f"{name!r} associated file name", problems)
    norm = None if mean is None else Normalization(mean, std or ())
    return TensorInfo(name, _text(tm.description, f"{name!r} description", problems), content, norm, labels_file)


def safe_member_name(name: str) -> bool:
    """True for a plain file name: no directory part, no '..', no drive, no control characters."""
    return (
        bool(name)
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and ":" not in name
        and not any(ord(c) < 32 or ord(c) == 127 for c in name)
    )


def _packed(data: bytes, problems: list[str]) -> dict[str, zipfile.ZipInfo] | None:
    """Zip members appended to the model (name -> info); None when there is no archive."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        problems.append(f"the appended archive holds {len(infos)} files; only the first {MAX_MEMBERS} are considered.")
    return {i.filename: i for i in infos[:MAX_MEMBERS]}


def _read_member(data: bytes, info: zipfile.ZipInfo, problems: list[str]) -> bytes | None:
    if info.file_size > MAX_LABELS_BYTES:
        problems.append(
            f"associated file {info.filename!r} is {info.file_size:,} bytes; labels files over "
            f"{MAX_LABELS_BYTES:,} bytes are not read."
        )
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf, zf.open(info) as fh:
            content = fh.read(MAX_LABELS_BYTES + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        problems.append(f"associated file {info.filename!r} cannot be read from the archive: {exc}")
        return None
    if len(content) > MAX_LABELS_BYTES:
        problems.append(f"associated file {info.filename!r} inflates past {MAX_LABELS_BYTES:,} bytes; not read.")
        return None
    return content


def read_metadata(data: bytes) -> EmbeddedMetadata | None:
    """The metadata embedded in ``data`` (a .tflite's bytes), None if there is none."""
    problems: list[str] = []
    try:
        buf = metadata_buffer(data)
    except _PARSE_ERRORS as exc:
        return EmbeddedMetadata(problems=(f"the model's flatbuffer cannot be read for metadata: {exc}",))
    if buf is None:
        return None
    if buf[4:8] != METADATA_FILE_IDENTIFIER:
        return EmbeddedMetadata(
            problems=(
                f"the TFLITE_METADATA buffer lacks the {METADATA_FILE_IDENTIFIER.decode()} "
                "identifier; it is not TFLite model metadata.",
            )
        )

    try:
        root = meta.ModelMetadataT.InitFromObj(meta.ModelMetadata.GetRootAs(bytearray(buf), 0))
        subgraphs = root.subgraphMetadata or []
        inputs = (
            tuple(_tensor(meta, tm, problems) for tm in (subgraphs[0].inputTensorMetadata or [])) if subgraphs else ()
        )
        outputs = (
            tuple(_tensor(meta, tm, problems) for tm in (subgraphs[0].outputTensorMetadata or [])) if subgraphs else ()
        )
    except _PARSE_ERRORS as exc:
        return EmbeddedMetadata(problems=(f"the metadata flatbuffer is malformed: {exc}",))
    members = _packed(data, problems) or {}
    unsafe = [n for n in members if not safe_member_name(n)]
    if unsafe:
        problems.append(
            f"the appended archive has file names with directories or control characters: "
            f"{', '.join(repr(n) for n in unsafe[:5])}; they are ignored."
        )
    labels: tuple[str, ...] = ()
    labels_name = next((t.labels_file for t in outputs if t.labels_file), None)
    if labels_name is not None:
        if not safe_member_name(labels_name):
            problems.append(f"the labels file name {labels_name!r} is not a plain file name; not read.")
        elif labels_name not in members:
            problems.append(f"the metadata names labels file {labels_name!r}, but the model carries no such file.")
        else:
            content = _read_member(data, members[labels_name], problems)
            if content is not None:
                try:
                    labels = tuple(parse_labels(content, f"labels file {labels_name!r}"))
                except UsageError as exc:
                    problems.append(str(exc))
    return EmbeddedMetadata(
        name=_text(root.name, "model name", problems),
        description=_text(root.description, "description", problems),
        version=_text(root.version, "version", problems),
        author=_text(root.author, "author", problems),
        min_parser_version=_text(root.minParserVersion, "min parser version", problems),
        inputs=inputs,
        outputs=outputs,
        packed_files=tuple(n for n in members if safe_member_name(n)),
        labels=labels,
        problems=tuple(problems),
    )
