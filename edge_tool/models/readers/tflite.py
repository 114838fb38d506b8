"""tflite: a LiteRT flatbuffer (``TFL3`` at byte 4), the fallback for a file nothing else recognises; its
quantization read from the tensor types, with manifest.json's mode kept where they cannot tell it apart."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import DataError, ModelError
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.models.readers.registry import READERS, Artifact, FormatReader
from edge_tool.schemas import load_json
from edge_tool.schemas.manifest import FILE, Manifest

SUFFIX = ".tflite"


def locate(path: Path) -> Path | None:
    """A .tflite file, or a directory holding exactly one (and no other model layout's file)."""
    if path.is_file():
        return path if path.suffix.lower() == SUFFIX else None
    if path.is_dir() and not (path / "model.json").exists():
        found = sorted(path.glob(f"*{SUFFIX}"))
        return found[0] if len(found) == 1 else None
    return None


def sniff(head: bytes) -> bool:
    """The flatbuffer file identifier of a TFLite model."""
    return head[4:8] == b"TFL3"


def describe(given: Path, model_file: Path) -> Artifact:
    """The flatbuffer parsed, not loaded: a file that crashes LiteRT must not crash the evaluator."""
    if not model_file.is_file():
        what = "something that is not a regular file (a FIFO, device or socket)" if model_file.exists() else "nothing"
        raise ModelError(f"Expected a .tflite file at {model_file}, but {what} is there.")
    facts = read_flatbuffer(model_file)  # ModelError for a file that is not a TFLite flatbuffer
    quant, source = file_label(facts, _manifest_quant(model_file))
    return Artifact(given, model_file, "tflite", quant, source, model_file.stat().st_size)


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


READER = READERS.register(
    FormatReader(
        "tflite",
        "a .tflite file",
        locate,
        describe,
        sniff=sniff,
        binds_name=False,  # a .tflite name is a guess other tools make too; the bytes decide
        fallback=True,
        dir_noun="a directory with exactly one .tflite file",
    )
)
