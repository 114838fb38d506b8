"""The byte-level tokenizer (``"tokenizer": "byte"``): ids 0..255 are the text's UTF-8 bytes, the spec's specials
(``<bos>``, ``<eos>``, ``<pad>``) come after; nothing to train or ship. Its Hugging Face ``tokenizer.json`` (a BPE
without merges over GPT-2's byte symbols) is derived from the spec for LiteRT-LM's bundle."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from edge_tool.lm.generate import decode_bytes, encode_bytes
from edge_tool.lm.spec import LmSpec
from edge_tool.lm.tokenizer.registry import TOKENIZERS, TokenizerKind


def byte_symbols() -> dict[int, str]:
    """GPT-2's byte → printable character map (what the HF ByteLevel pre-tokenizer and decoder use)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in chars:
            chars[b], extra = chr(256 + extra), extra + 1
    return chars


def special_tokens(spec: LmSpec) -> dict[str, int]:
    """The specials' text -> id (as the tokenizer.json's added tokens name them)."""
    return {"<bos>": spec.bos_id, "<eos>": spec.eos_id, "<pad>": spec.pad_id}


def byte_tokenizer_json(spec: LmSpec) -> str:
    """An HF ``tokenizer.json`` giving edgetool's byte ids: UTF-8 bytes 0..255, then the spec's special tokens."""
    symbols = byte_symbols()
    specials = special_tokens(spec)
    level = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    added = [
        {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
        | {"special": True}
        for c, i in specials.items()
    ]
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None}
    model |= {"end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
    model |= {"vocab": {symbols[b]: b for b in range(256)} | specials, "merges": []}
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None}
    doc |= {"pre_tokenizer": {"type": "ByteLevel", **level}, "post_processor": None}
    doc |= {"decoder": {"type": "ByteLevel", **level}, "model": model}
    return json.dumps(doc, ensure_ascii=False)


@dataclass(frozen=True)
class ByteTokenizer:
    """UTF-8 bytes as ids (``spec`` gives the specials)."""

    spec: LmSpec
    name: str = "byte"

    def encode(self, text: str) -> list[int]:
        """The UTF-8 bytes of ``text``."""
        return encode_bytes(text)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of byte ids (ids >= 256 dropped; broken UTF-8 as U+FFFD)."""
        return decode_bytes(ids)

    def token_bytes(self, token: int) -> bytes:
        """One byte, or b"" for a special id."""
        return bytes([token]) if 0 <= token < 256 else b""

    def hf_json(self) -> str:
        """``byte_tokenizer_json`` of the spec."""
        return byte_tokenizer_json(self.spec)


def _load(spec: LmSpec, folder: Path | None) -> ByteTokenizer:
    return ByteTokenizer(spec)


TOKENIZERS.register(TokenizerKind("byte", "UTF-8 bytes 0..255, then <bos> <eos> <pad>", _load, ships_file=False))
