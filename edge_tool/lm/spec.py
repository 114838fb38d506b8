"""``edgetool_lm.json``: the LM description that travels with a contract model (docs/lm.md).

``LmSpec`` is its frozen record and ``LmSpec.to_json`` / ``read_spec`` its one serializer; the file lives in a
SavedModel's ``assets/`` (and in convert's manifest / a ``.litertlm``'s metadata).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.serial import Record, SerialError
from edge_tool.errors import ModelError, collect_and_raise

FORMAT = 1
SPEC_NAME = "edgetool_lm.json"
TOKENIZERS = ("byte", "bpe")
SAMPLER_KINDS = ("xorshift32", "litert-lm")  # lm.sampler_kinds.SAMPLERS' names (tests/test_lm_sampling.py)
LITERT_LM_MAX_K = 1024  # lm.sampling_litertlm.MAX_K
BYTE_BOS, BYTE_EOS, BYTE_PAD = 256, 257, 258  # byte-level ids: 0..255 = UTF-8 bytes, then these specials
BYTE_VOCAB = 264  # 259 ids padded up to a multiple of 8
# one layer's K (or V) cache: "bshd" [1, max_len, kv_heads, head_dim] (the default), or "bhsd" [1, kv_heads, max_len,
# head_dim], LiteRT-LM 0.18's, which a .litertlm bundle then uses without transposing the caches at each call
CACHE_LAYOUTS = {"bshd": "[1, max_len, kv_heads, head_dim]", "bhsd": "[1, kv_heads, max_len, head_dim]"}


@dataclass(frozen=True)
class SamplerDefaults(Record):
    """Default sampling: temperature 0 means greedy (argmax, lowest id on ties); top_k 0 means the whole vocabulary;
    ``kind`` the rule that draws (SAMPLER_KINDS; docs/lm.md "Sampling")."""

    temperature: float = 0.0
    top_k: int = 0
    seed: int = 0
    kind: str = "xorshift32"


@dataclass(frozen=True)
class LmSpec(Record):
    """What edgetool needs to know of a contract LM beyond its signatures; checked on construction."""

    vocab_size: int
    max_len: int
    prefill_lengths: tuple[int, ...]
    num_layers: int
    num_kv_heads: int
    head_dim: int
    tokenizer: str = "byte"
    bos_id: int = BYTE_BOS
    eos_id: int = BYTE_EOS
    pad_id: int = BYTE_PAD
    stop_ids: tuple[int, ...] = (BYTE_EOS,)
    sampler: SamplerDefaults = field(default_factory=SamplerDefaults)
    format: int = FORMAT
    cache_layout: str = "bshd"

    json_order = ("format", "tokenizer")

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefill_lengths", tuple(int(t) for t in self.prefill_lengths))
        object.__setattr__(self, "stop_ids", tuple(int(t) for t in self.stop_ids))
        problems = []
        if self.format != FORMAT:
            problems.append(f"format is {self.format!r}; this edgetool reads format {FORMAT}.")
        if self.tokenizer not in TOKENIZERS:
            problems.append(f"tokenizer is {self.tokenizer!r}; expected one of {', '.join(TOKENIZERS)}.")
        for name in ("vocab_size", "max_len", "num_layers", "num_kv_heads", "head_dim"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                problems.append(f"{name} must be a positive integer, got {getattr(self, name)!r}.")
        if not self.prefill_lengths or any(not 1 <= t <= self.max_len for t in self.prefill_lengths):
            problems.append(f"prefill_lengths must be 1..max_len ({self.max_len}), got {list(self.prefill_lengths)}.")
        for name, ids in (("bos_id", (self.bos_id,)), ("eos_id", (self.eos_id,)), ("pad_id", (self.pad_id,))):
            problems += _ids_problems(name, ids, self.vocab_size)
        problems += _ids_problems("stop_ids", self.stop_ids, self.vocab_size)
        if self.cache_layout not in CACHE_LAYOUTS:
            problems.append(f"cache_layout is {self.cache_layout!r}; expected one of {', '.join(CACHE_LAYOUTS)}.")
        if self.sampler.temperature < 0 or self.sampler.top_k < 0:
            problems.append("sampler temperature and top_k must be >= 0.")
        problems += _sampler_problems(self.sampler, self.vocab_size)
        collect_and_raise(problems, header=f"Invalid {SPEC_NAME}:")

    def to_json(self) -> str:
        """The file's text (the one writer of ``edgetool_lm.json``)."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def cache_shape(self, max_len: int | None = None) -> tuple[int, int, int, int]:
        """One layer's K (or V) cache in ``cache_layout`` (CACHE_LAYOUTS)."""
        return cache_shape(self.cache_layout, max_len or self.max_len, self.num_kv_heads, self.head_dim)


def cache_shape(layout: str, max_len: int, heads: int, head_dim: int) -> tuple[int, int, int, int]:
    """One layer's K (or V) cache shape in ``layout`` (CACHE_LAYOUTS)."""
    return (1, heads, max_len, head_dim) if layout == "bhsd" else (1, max_len, heads, head_dim)


def _sampler_problems(s: SamplerDefaults, vocab: int) -> list[str]:
    if s.kind not in SAMPLER_KINDS:
        return [f"sampler kind is {s.kind!r}; expected one of {', '.join(SAMPLER_KINDS)}."]
    if s.kind == "litert-lm" and (s.top_k or vocab) > LITERT_LM_MAX_K:
        return [
            f"sampler kind litert-lm draws from at most {LITERT_LM_MAX_K} candidates (top_k {s.top_k}, vocabulary "
            f"{vocab}); set sampler.top_k to 1..{LITERT_LM_MAX_K}, or use kind xorshift32."
        ]
    return []


def _ids_problems(name: str, ids: tuple[int, ...], vocab: int) -> list[str]:
    bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < vocab]
    return [f"{name} {bad} lie outside the vocabulary 0..{vocab - 1}."] if bad else []


def parse_spec(text: str, where: str) -> LmSpec:
    """``LmSpec`` from the JSON text of ``where``; ModelError naming the file and the problem."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise SerialError("$ is not an object")
        return LmSpec.from_dict(data)
    except (ValueError, SerialError) as exc:  # JSONDecodeError is a ValueError
        raise ModelError(
            f"{where} is not a readable {SPEC_NAME}: {exc}. Write it with edge_tool.lm.export (or "
            "LmSpec(...).to_json()); docs/lm.md lists its keys."
        ) from None


def read_spec(saved_model: Path) -> LmSpec | None:
    """The ``assets/edgetool_lm.json`` of a SavedModel directory, or None when it has none."""
    path = Path(saved_model) / "assets" / SPEC_NAME
    if not path.is_file():
        return None
    return parse_spec(path.read_text(encoding="utf-8", errors="replace"), str(path))
