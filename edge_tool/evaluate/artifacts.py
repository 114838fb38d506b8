"""What an ARTIFACT is: format (.tflite / TFJS graph model / .onnx), quantization mode, size on disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import DataError, ModelError
from edge_tool.evaluate.config import ArtifactFormat
from edge_tool.evaluate.onnx_facts import looks_like_onnx, read_onnx
from edge_tool.litert.tflite_runner import read_flatbuffer
from edge_tool.models.modelio import read_graph_model_json, weight_paths
from edge_tool.schemas import load_json
from edge_tool.schemas.manifest import FILE, Manifest


@dataclass(frozen=True)
class Artifact:
    """One artefact to evaluate: the path the user gave, the model file to load, format, quant mode, size."""

    given: Path
    model_file: Path
    format: ArtifactFormat
    quant: str
    quant_source: str
    size_bytes: int

    @property
    def label(self) -> str:
        """Short display name (file name, or directory name for TFJS)."""
        return self.given.name or str(self.given)


def describe(path: Path) -> Artifact:
    """Classify ``path``; ModelError if it is none of a .tflite file, a TFJS model directory / model.json and an
    .onnx file (an .onnx name must hold an ONNX model; another name holding one is read as ONNX too)."""
    path = Path(path)
    if not path.exists():
        raise ModelError(
            f"Artifact {path} does not exist; expected a .tflite file, a TFJS model directory or an .onnx file."
        )
    if path.suffix.lower() == ".onnx":
        return _onnx(path)
    if path.is_file() and path.name == "model.json":
        return _tfjs(path, path.parent)
    if path.is_dir():
        if (path / "model.json").is_file():
            return _tfjs(path, path)
        tflites = sorted(path.glob("*.tflite"))
        if len(tflites) == 1:
            return _tflite(path, tflites[0])
        raise ModelError(
            f"Artifact directory {path} holds {len(tflites)} .tflite files and no model.json; expected a TFJS model "
            "directory or exactly one .tflite (or pass the .tflite file itself)."
        )
    return _tflite(path, path)


def _tflite(given: Path, model_file: Path) -> Artifact:
    if not model_file.is_file():
        raise ModelError(f"Expected a .tflite file at {model_file}, but nothing is there.")
    if _holds_onnx(model_file):
        return _onnx(given)
    # parsed, not loaded: a file that crashes LiteRT must not crash the evaluator (it runs in a worker)
    facts = read_flatbuffer(model_file)  # ModelError for a file that is not a TFLite flatbuffer
    quant, source = file_label(facts, _manifest_quant(model_file))
    return Artifact(given, model_file, ArtifactFormat.TFLITE, quant, source, model_file.stat().st_size)


def _holds_onnx(path: Path) -> bool:
    """True when ``path`` (not named .onnx) is not a TFLite flatbuffer but starts like an ONNX ModelProto."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head[4:8] != b"TFL3" and looks_like_onnx(head)


def _onnx(path: Path) -> Artifact:
    """An .onnx file, parsed and checked (``onnx_facts``), never loaded here."""
    facts = read_onnx(path)
    return Artifact(
        path, path, ArtifactFormat.ONNX, facts.quant, "ONNX graph (QDQ nodes, initializer types)", path.stat().st_size
    )


def file_label(facts, claimed: str | None) -> tuple[str, str]:
    """(what the file is, where that came from): the flatbuffer's tensor types decide, not a name or a manifest.

    The manifest's mode is kept only where the tensor types cannot tell it apart (a qat file is an int8 file); a
    "dynamic" file with no weight quantized is fp32, a file auto picked as dynamic is dynamic, and an integer
    file that keeps float ops says "(not fully integer)".
    """
    if claimed == "qat" and facts.quant == "int8":
        return "qat" + facts.label[len(facts.quant) :], f"tensor types + {FILE}"
    if claimed is not None and claimed != facts.quant:
        return facts.label, f"tensor types ({FILE} says {claimed})"
    return facts.label, "tensor types"


def _manifest_quant(model_file: Path) -> str | None:
    """``quant`` of ``model_file``'s entry in the manifest.json ``edgetool convert`` wrote beside it, if any.

    A manifest.json that is not a JSON object claiming edgetool's format (``"schema": "edgetool.convert/…"``) is
    another tool's file and ignored; one that claims the format but breaks its schema is a DataError naming it.
    """
    path = model_file.parent / FILE
    if not path.is_file():
        return None
    try:
        doc = load_json(path, "manifest")
    except DataError:
        return None  # unreadable or not JSON: it claims nothing
    if not Manifest.claims(doc):
        return None
    entry = Manifest.from_dict(doc, str(path)).artifact(model_file.name)
    return entry.quant if entry is not None else None


def _tfjs(given: Path, model_dir: Path) -> Artifact:
    model_json = model_dir / "model.json"
    doc = read_graph_model_json(model_dir, "eval")  # every shard path checked to be a file inside model_dir
    size = model_json.stat().st_size + sum((model_dir / p).stat().st_size for p in weight_paths(model_dir, doc))
    qtypes = set()
    for group in doc.get("weightsManifest", []):
        for w in group.get("weights", []):
            q = (w.get("quantization") or {}).get("dtype") if isinstance(w, dict) else None
            if q:
                qtypes.add(str(q))
    quant = (
        {"float16": "fp16"}.get(next(iter(qtypes)), next(iter(qtypes)))
        if len(qtypes) == 1
        else ("mixed" if qtypes else "fp32")
    )
    return Artifact(given, model_json, ArtifactFormat.TFJS, quant, "model.json weights", size)


def saved_model_size(path: Path) -> int:
    """Bytes of a SavedModel proper (saved_model.pb, fingerprint, variables), ignoring sidecar files."""
    path = Path(path)
    total = 0
    for name in ("saved_model.pb", "saved_model.pbtxt", "fingerprint.pb", "keras_metadata.pb"):
        if (path / name).is_file():
            total += (path / name).stat().st_size
    variables = path / "variables"
    if variables.is_dir():
        total += sum(p.stat().st_size for p in variables.rglob("*") if p.is_file())
    return total
