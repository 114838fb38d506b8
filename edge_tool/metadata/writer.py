"""Build TFLite model metadata with the generated schema classes and embed it the way MetadataPopulator does.

MediaPipe's populator (mediapipe/tasks/python/metadata/metadata.py) cannot be used as a library here (see the
package docstring), so this module does the same three steps with the same generated classes: pack a
``ModelMetadataT`` with file identifier ``M001``; store it in a new model buffer named by a ``TFLITE_METADATA``
entry of ``Model.metadata`` and re-pack the model with identifier ``TFL3``; append the associated files as a zip
archive after the flatbuffer (``zipfile`` in append mode on a non-zip file writes a new archive at its end,
which TFLite ignores and metadata readers open as a zip).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

import flatbuffers
import numpy as np

from edge_tool.errors import ConversionError
from edge_tool.metadata import metadata_schema_py_generated as meta
from edge_tool.parsers.tflite_schema import tflite_schema
from edge_tool.schemas.records import MetadataRecord, Normalization

METADATA_FIELD_NAME = "TFLITE_METADATA"
TFLITE_FILE_IDENTIFIER = b"TFL3"
METADATA_FILE_IDENTIFIER = b"M001"
LABELS_FILE = "labels.txt"
# GetMinimumMetadataParserVersion (mediapipe/tasks/cc/metadata/metadata_version.cc) returns 1.0.0 unless a member
# added later is present; every member written here (names, descriptions, image/feature content, normalization as
# a tensor process unit, stats, TENSOR_AXIS_LABELS files without a version) is a 1.0.0 member.
MIN_PARSER_VERSION = "1.0.0"
IMAGE_CHANNELS = {1: "GRAYSCALE", 3: "RGB"}


@dataclass(frozen=True)
class MetadataSpec:
    """What to embed: model name/description/version/author, class labels, and input normalization.

    ``mean``/``std`` map what an app feeds to what the model takes: ``model_input = (pixel - mean) / std``, one
    value or one per channel. Identity (0, 1) means the model takes raw 0..255 pixel values.
    """

    name: str
    description: str
    version: str
    author: str
    labels: tuple[str, ...] = ()
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)

    @property
    def identity(self) -> bool:
        """True when the normalization leaves pixel values unchanged."""
        return all(m == 0 for m in self.mean) and all(s == 1 for s in self.std)

    def record(self) -> MetadataRecord:
        """The summary manifest.json keeps: the model fields, the number of labels and their file, the normalization."""
        return MetadataRecord(
            self.name,
            self.description,
            self.version,
            self.author,
            len(self.labels),
            LABELS_FILE if self.labels else None,
            Normalization(self.mean, self.std),
        )


def _schemas():
    return meta, tflite_schema()


def _tensor_names(model, sg_index: int) -> dict[int, str]:
    """Tensor index -> signature name (the names apps see) for subgraph ``sg_index``."""
    names = {}
    for sig in model.signatureDefs or []:
        if sig.subgraphIndex == sg_index:
            for tm in [*(sig.inputs or []), *(sig.outputs or [])]:
                names[tm.tensorIndex] = tm.name.decode() if isinstance(tm.name, bytes) else str(tm.name)
    return names


def _is_image(shape) -> bool:
    return shape is not None and len(shape) == 4 and int(shape[-1]) in IMAGE_CHANNELS


def _per_channel(values: tuple[float, ...], channels: int, what: str) -> list[float]:
    if len(values) not in (1, channels):
        raise ConversionError(
            f"--input-{what} has {len(values)} values; the image input has {channels} channel(s), "
            f"so give 1 or {channels}."
        )
    return [float(v) for v in values]


def _input_metadata(meta, spec: MetadataSpec, name: str, shape, type_name: str):
    tm = meta.TensorMetadataT()
    tm.name = name
    content = meta.ContentT()
    if not _is_image(shape):
        tm.description = f"Input features ({type_name})."
        content.contentPropertiesType = meta.ContentProperties.FeatureProperties
        content.contentProperties = meta.FeaturePropertiesT()
        tm.content = content
        return tm
    channels = int(shape[-1])
    image = meta.ImagePropertiesT()
    image.colorSpace = getattr(meta.ColorSpaceType, IMAGE_CHANNELS[channels])
    content.contentPropertiesType = meta.ContentProperties.ImageProperties
    content.contentProperties = image
    tm.content = content
    norm = meta.NormalizationOptionsT()
    norm.mean = _per_channel(spec.mean, channels, "mean")
    norm.std = _per_channel(spec.std, channels, "std")
    if any(s == 0 for s in norm.std):
        raise ConversionError("--input-std must not contain 0 (the model input is (pixel - mean) / std).")
    unit = meta.ProcessUnitT()
    unit.optionsType = meta.ProcessUnitOptions.NormalizationOptions
    unit.options = norm
    tm.processUnits = [unit]
    stats = meta.StatsT()
    stats.min = [(0.0 - m) / s for m, s in zip(_broadcast(norm.mean, channels), _broadcast(norm.std, channels))]
    stats.max = [(255.0 - m) / s for m, s in zip(_broadcast(norm.mean, channels), _broadcast(norm.std, channels))]
    tm.stats = stats
    space = IMAGE_CHANNELS[channels].lower()
    tm.description = (
        f"{space} image {int(shape[1])}x{int(shape[2])} ({type_name}): raw 0..255 pixel values, the "
        "model scales them itself"
        if spec.identity
        else f"{space} image {int(shape[1])}x{int(shape[2])} ({type_name}), normalized as (pixel - mean) / std"
    )
    return tm


def _broadcast(values: list[float], n: int) -> list[float]:
    return values * n if len(values) == 1 else values


def _output_metadata(meta, spec: MetadataSpec, name: str, shape, labelled: bool):
    tm = meta.TensorMetadataT()
    tm.name = name
    content = meta.ContentT()
    content.contentPropertiesType = meta.ContentProperties.FeatureProperties
    content.contentProperties = meta.FeaturePropertiesT()
    tm.content = content
    binary = shape is not None and shape[-1] == 1 and len(spec.labels) == 2
    if labelled:
        tm.description = (
            f"Binary score: above 0.5 is {spec.labels[1]!r} (line 2 of {LABELS_FILE}), below is {spec.labels[0]!r}."
            if binary
            else f"Scores of the {len(spec.labels)} classes, in the order of {LABELS_FILE}."
        )
        f = meta.AssociatedFileT()
        f.name = LABELS_FILE
        f.description = "Class labels, one per line; line i names output index i."
        f.type = meta.AssociatedFileType.TENSOR_AXIS_LABELS
        tm.associatedFiles = [f]
    else:
        tm.description = "Model output."
    return tm


def _labelled_output(shapes: list, count: int) -> int | None:
    """Index of the output the labels name: the first [N, K] output with K == len(labels), else the first with K
    scores on its last axis ([N, H, W, K] per-pixel classes: TENSOR_AXIS_LABELS names that axis, as segmenters do);
    two labels also name a binary head's single score [N, 1] (line 2 above 0.5, line 1 below)."""
    for rank_ok in (lambda r: r == 2, lambda r: r >= 2):
        for i, shape in enumerate(shapes):
            if shape is not None and rank_ok(len(shape)) and int(shape[-1]) == count:
                return i
    if count == 2:  # a binary head: one sigmoid score [N, 1] for the second label
        return next((i for i, s in enumerate(shapes) if s is not None and len(s) == 2 and int(s[-1]) == 1), None)
    return None


def build_metadata(model, spec: MetadataSpec, type_names: dict[int, str]) -> bytes:
    """The ModelMetadata flatbuffer (identifier M001) for subgraph 0 of ``model`` (a schema ModelT)."""
    meta, _ = _schemas()
    sg = model.subgraphs[0]
    names = _tensor_names(model, 0)

    def label(i: int) -> str:
        t = sg.tensors[i]
        raw = t.name.decode(errors="replace") if isinstance(t.name, bytes) else str(t.name)
        return names.get(i, raw)

    def shape(i: int):
        return None if sg.tensors[i].shape is None else [int(d) for d in sg.tensors[i].shape]

    out_shapes = [shape(i) for i in sg.outputs]
    labelled = _labelled_output(out_shapes, len(spec.labels)) if spec.labels else None
    if spec.labels and labelled is None:
        raise ConversionError(
            f"{len(spec.labels)} labels given, but no output of the model has "
            f"{len(spec.labels)} scores on its last axis (outputs: {out_shapes})."
        )
    sub = meta.SubGraphMetadataT()
    sub.name = spec.name
    sub.inputTensorMetadata = [
        _input_metadata(meta, spec, label(i), shape(i), type_names.get(sg.tensors[i].type, "?").lower())
        for i in sg.inputs
    ]
    sub.outputTensorMetadata = [
        _output_metadata(meta, spec, label(i), out_shapes[k], k == labelled) for k, i in enumerate(sg.outputs)
    ]
    root = meta.ModelMetadataT()
    root.name, root.description, root.version, root.author = spec.name, spec.description, spec.version, spec.author
    root.subgraphMetadata = [sub]
    root.minParserVersion = MIN_PARSER_VERSION

    b = flatbuffers.Builder(0)
    b.Finish(root.Pack(b), METADATA_FILE_IDENTIFIER)
    return bytes(b.Output())


def embed_metadata(tflite: bytes, spec: MetadataSpec) -> bytes:
    """``tflite`` with ``spec`` embedded (replacing earlier TFLITE_METADATA) and labels.txt appended as a zip."""
    _, schema = _schemas()
    if bytes(tflite[4:8]) != TFLITE_FILE_IDENTIFIER:
        raise ConversionError("The converter's output is not a TFLite flatbuffer (no TFL3 identifier).")
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(tflite), 0))
    type_names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_") and isinstance(v, int)}
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(build_metadata(model, spec, type_names), dtype=np.uint8)
    model.metadata = model.metadata or []
    model.buffers = model.buffers or []
    existing = [m for m in model.metadata if _name(m.name) == METADATA_FIELD_NAME]
    if existing:
        model.buffers[existing[0].buffer] = buffer
    else:
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name = METADATA_FIELD_NAME
        entry.buffer = len(model.buffers) - 1
        model.metadata.append(entry)
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), TFLITE_FILE_IDENTIFIER)
    out = io.BytesIO(bytes(b.Output()))
    if spec.labels:
        out.seek(0, io.SEEK_END)
        # a fixed member timestamp: the same model and labels give the same bytes (sha256 in manifests, caches)
        member = zipfile.ZipInfo(LABELS_FILE, date_time=(1980, 1, 1, 0, 0, 0))
        with zipfile.ZipFile(out, "a") as zf:
            zf.writestr(member, ("\n".join(spec.labels) + "\n").encode("utf-8"))
    return out.getvalue()


def _name(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
