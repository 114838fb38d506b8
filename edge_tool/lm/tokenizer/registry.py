"""The tokenizer table: ``TokenizerKind`` specs (``byte``, ``bpe``) registered in ``TOKENIZERS``, and
``load_tokenizer``: the tokenizer a contract LM names in its ``edgetool_lm.json``, read from where the model keeps it
(a SavedModel's ``assets/``, the folder of a converted ``.tflite``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from edge_tool.core.registry import Registry
from edge_tool.lm.spec import LmSpec

TOKENIZER_FILE = "tokenizer.json"  # Hugging Face tokenizers' format: how a trained tokenizer travels


class Tokenizer(Protocol):
    """Text <-> the model's ids. ``encode`` adds no special token; ``decode`` drops them."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_bytes(self, token: int) -> bytes:
        """The UTF-8 bytes one id stands for (b"" for a special id): what a streaming decoder appends."""

    def hf_json(self) -> str:
        """The Hugging Face ``tokenizer.json`` giving these ids (LiteRT-LM's bundle and the page read it)."""


@dataclass(frozen=True)
class TokenizerKind:
    """One tokenizer: ``load(spec, folder)`` builds it for a model (``folder`` holds its TOKENIZER_FILE, if any)."""

    name: str
    summary: str
    load: Callable[[LmSpec, Path | None], Tokenizer]
    ships_file: bool  # True: the model carries TOKENIZER_FILE (it was trained); False: derived from the spec


TOKENIZERS: Registry[TokenizerKind] = Registry("LM tokenizer")


def tokenizer_folder(model: Path) -> Path:
    """Where a model keeps its tokenizer file: a SavedModel's ``assets/``, else the folder of the file."""
    model = Path(model)
    return model / "assets" if model.is_dir() else model.parent


def load_tokenizer(spec: LmSpec, folder: Path | None) -> Tokenizer:
    """The tokenizer ``spec`` names, read from ``folder`` when it ships a file; ModelError when it cannot be."""
    return TOKENIZERS[spec.tokenizer].load(spec, folder)
