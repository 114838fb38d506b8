"""Artefact formats as eval reads them, one module per format; importing this package registers each in
``registry.READERS``. Its derived views: ``ArtifactFormat`` (the formats eval runs; eval.schema.json's
``format`` enum, checked by a test) and ``describe`` (which format a path is, and its facts)."""

import dataclasses
from enum import Enum
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.models.readers.registry import READERS, Artifact, FormatReader

# isort: off
# each module registers itself; this order is the order content sniffs are tried (the strongest signature first)
from edge_tool.models.readers import tflite, tfjs, onnx  # noqa: F401
# isort: on

__all__ = ["READERS", "Artifact", "ArtifactFormat", "FormatReader", "describe", "recognise"]

ArtifactFormat = Enum("ArtifactFormat", [(n.upper(), n) for n in READERS], type=str, module=__name__)
ArtifactFormat.__doc__ = "Kinds of artefact eval can run (one per registered reader)."
HEAD = 8  # bytes every sniff gets


def recognise(path: Path) -> tuple[FormatReader, Path]:
    """(the reader of ``path``'s format, the model file to read): the name or layout decides, unless the bytes of
    a file whose name does not bind it say another format; a file nothing recognises goes to the fallback reader.
    ModelError when ``path`` does not exist or is a directory of no known layout."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Artifact {path} does not exist; expected {_expected()}.")
    if not path.is_dir() and not path.is_file():
        raise ModelError(f"Artifact {path} is not a regular file (a FIFO, device or socket); expected {_expected()}.")
    named = next(((r, f) for r in READERS.values() if (f := r.locate(path)) is not None), None)
    if named is None and path.is_dir():
        layouts = [r.dir_noun for r in READERS.values() if r.dir_noun]
        raise ModelError(
            f"Artifact directory {path} is none of {' or '.join(layouts)}; pass the model file itself instead."
        )
    reader, model_file = named or (next(r for r in READERS.values() if r.fallback), path)
    if reader.binds_name and named is not None:
        return reader, model_file
    head = _head(model_file)
    return next((r for r in READERS.values() if r.sniff(head)), reader), model_file


def describe(path: Path) -> Artifact:
    """Classify ``path`` (``recognise``) and read its facts; ModelError naming what is wrong with it."""
    reader, model_file = recognise(path)
    art = reader.describe(Path(path), model_file)
    return dataclasses.replace(art, format=ArtifactFormat(art.format))


def _expected() -> str:
    """What an artefact path may be: every reader's noun ("a .tflite file, ... or a .onnx file")."""
    nouns = [r.noun for r in READERS.values()]
    return f"{', '.join(nouns[:-1])} or {nouns[-1]}"


def _head(path: Path) -> bytes:
    """The first bytes of a regular file; b"" for anything else (opening a FIFO would block until a writer came)."""
    if not path.is_file():
        return b""  # the reader says what is wrong with it
    try:
        with open(path, "rb") as f:
            return f.read(HEAD)
    except OSError:
        return b""  # the reader's own parser says why it cannot be read
