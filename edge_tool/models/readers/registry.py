"""The artefact formats eval reads: each module under ``models/readers`` registers its ``FormatReader`` with
``READERS.register(reader)``.

A row says how a path is recognised as the format — by its name or layout (``locate``: a suffix, a model.json, a
directory holding one model file) and by its first bytes (``sniff``) — and what eval shows about one such file
(``describe``: quantization, where that came from, size), parsed and checked, never loaded. The writing side is
``convert/formats`` (floor 7); this one sits where convert, evaluate and check can all read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class Artifact:
    """One artefact to evaluate: the path the user gave, the model file to load, format, quant mode, size."""

    given: Path
    model_file: Path
    format: str  # an ArtifactFormat member from ``describe`` (its reader gives the format's name)
    quant: str
    quant_source: str
    size_bytes: int

    @property
    def label(self) -> str:
        """Short display name (file name, or directory name for TFJS)."""
        return self.given.name or str(self.given)


def _never(head: bytes) -> bool:
    return False


@dataclass(frozen=True)
class FormatReader:
    """How eval recognises one artefact format and what it shows about a file of it."""

    name: str  # the format's name (convert's --format value, the report's ``format``)
    noun: str  # what a path of it is, for messages ("a .tflite file")
    locate: Callable  # (Path) -> the model file when the path's name or layout says this format, else None
    describe: Callable  # (given Path, model file) -> Artifact; ModelError naming what is wrong with the file
    sniff: Callable = _never  # (first bytes of a file) -> True when they say this format
    binds_name: bool = True  # a file its name claims is read as this format even when its bytes sniff as another
    fallback: bool = False  # a file nothing recognises is read as this one (its parser says what is wrong)
    dir_noun: str | None = None  # the directory layout ``locate`` accepts, for the message when none does


READERS: Registry[FormatReader] = Registry("artefact format")
