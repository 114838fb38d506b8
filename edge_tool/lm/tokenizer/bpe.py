"""The byte-level BPE tokenizer (``"tokenizer": "bpe"``): trained with Hugging Face ``tokenizers`` (the ``lm`` extra)
on the training text only, shipped as ``tokenizer.json`` beside the model (a SavedModel's ``assets/``, the folder of
a converted ``.tflite``). GPT-2's recipe without a normalizer: the ByteLevel pre-tokenizer (its regex split, no prefix
space) over UTF-8 bytes, merges learned from the text, specials ``<bos>`` ``<eos>`` ``<pad>`` first (ids 0, 1, 2),
so any text encodes (no unknown token) and decodes back to itself. The page's JS (web_demo/lm/bpe.js) implements
the same encode from the same file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from edge_tool.errors import ModelError, UsageError
from edge_tool.lm.spec import SPEC_NAME, LmSpec
from edge_tool.lm.tokenizer.byte import byte_symbols
from edge_tool.lm.tokenizer.registry import TOKENIZER_FILE, TOKENIZERS, TokenizerKind

EXTRA = "pip install 'edgetool[lm]'"
SPECIALS = ("<bos>", "<eos>", "<pad>")  # ids 0, 1, 2 of a trained tokenizer
FLAGS = ("single_word", "lstrip", "rstrip")  # added-token options the page's JS does not implement
MIN_VOCAB = 256 + len(SPECIALS)  # every byte, then the specials; the merges come on top


def require_tokenizers(what: str) -> None:
    """UsageError with the install line when Hugging Face ``tokenizers`` is missing."""
    if find_spec("tokenizers") is None:
        raise UsageError(f"{what} needs Hugging Face `tokenizers`, which is not installed: {EXTRA}.")


def train_bpe(text: str, vocab_size: int) -> str:
    """The ``tokenizer.json`` of a byte-level BPE of ``vocab_size`` ids (at most) learned from ``text``."""
    require_tokenizers("--tokenizer bpe")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(text.split("\n\n"), trainer)  # blocks: no merge spans a blank line
    return tok.to_str()


def _added(doc: dict) -> dict[str, int]:
    return {t["content"]: int(t["id"]) for t in doc.get("added_tokens") or ()}


@dataclass(frozen=True)
class BpeTokenizer:
    """A trained byte-level BPE: encode/decode through Hugging Face ``tokenizers`` (the reference)."""

    text: str  # the tokenizer.json
    hf: object  # tokenizers.Tokenizer
    pieces: tuple[bytes, ...]  # id -> its bytes (b"" for specials and holes)
    name: str = "bpe"

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (no special token added; a special's literal text becomes its id, as in HF)."""
        return list(self.hf.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (specials dropped; broken UTF-8 as U+FFFD)."""
        return b"".join(self.token_bytes(int(i)) for i in ids).decode("utf-8", errors="replace")

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one id."""
        return self.pieces[token] if 0 <= token < len(self.pieces) else b""

    def hf_json(self) -> str:
        """The shipped file's text."""
        return self.text


def _pieces(doc: dict) -> tuple[bytes, ...]:
    back = {c: b for b, c in byte_symbols().items()}
    specials = set(_added(doc).values())
    vocab = doc["model"]["vocab"]
    out = [b""] * (1 + max(vocab.values()))
    for piece, i in vocab.items():
        if i not in specials:
            out[i] = bytes(back[c] for c in piece)
    return tuple(out)


def tokenizer_problems(doc: dict, spec: LmSpec) -> list[str]:
    """Why a tokenizer.json does not fit ``spec`` (or is not the byte-level BPE edgetool and the page implement)."""
    problems = []
    model, pre = doc.get("model") or {}, doc.get("pre_tokenizer") or {}
    if model.get("type") != "BPE" or pre.get("type") != "ByteLevel" or doc.get("normalizer") is not None:
        problems.append("it is not a byte-level BPE (model BPE, pre_tokenizer ByteLevel, no normalizer)")
    if pre.get("add_prefix_space") or not pre.get("use_regex", True):
        problems.append("its ByteLevel pre-tokenizer adds a prefix space or skips the GPT-2 split")
    extras = ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback")
    if any(model.get(k) for k in extras) or any(t.get(k) for t in doc.get("added_tokens") or () for k in FLAGS):
        problems.append(f"it uses {', '.join(extras)} or added tokens' {', '.join(FLAGS)} (the page's JS does not)")
    added = _added(doc)
    for name, want in zip(SPECIALS, (spec.bos_id, spec.eos_id, spec.pad_id)):
        if added.get(name) != want:
            problems.append(f"{name} is id {added.get(name)} there, {want} in {SPEC_NAME}")
    ids = [*model.get("vocab", {}).values(), *added.values()]
    if ids and max(ids) >= spec.vocab_size:
        problems.append(f"its ids reach {max(ids)}, beyond the model's vocabulary of {spec.vocab_size}")
    return problems


def _load(spec: LmSpec, folder: Path | None) -> BpeTokenizer:
    path = None if folder is None else Path(folder) / TOKENIZER_FILE
    if path is None or not path.is_file():
        raise ModelError(
            f"{SPEC_NAME} names the bpe tokenizer but {path or TOKENIZER_FILE} is missing: a BPE model ships its "
            f"Hugging Face {TOKENIZER_FILE} in the SavedModel's assets/ (edgetool train --tokenizer bpe writes it; "
            "convert copies it beside the .tflite files). Put it back, or retrain."
        )
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
        problems = tokenizer_problems(doc, spec)
        pieces = _pieces(doc)
    except (ValueError, AttributeError, TypeError, KeyError) as exc:
        problems = [f"it is not a readable tokenizer.json ({exc})"]
    if problems:
        raise ModelError(
            f"{path} cannot tokenize for this model: {'; '.join(problems)}. Ship the tokenizer.json the "
            "model was trained with (edgetool train --tokenizer bpe writes a fitting one)."
        )
    require_tokenizers(f"the bpe tokenizer of {path}")
    from tokenizers import Tokenizer

    return BpeTokenizer(text, Tokenizer.from_str(text), pieces)


TOKENIZERS.register(
    TokenizerKind("bpe", "byte-level BPE trained on the training text (HF tokenizer.json)", _load, ships_file=True)
)
