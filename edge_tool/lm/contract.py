"""Read a model's signatures and check them against the LM contract (docs/lm.md).

``read_lm_contract(path)`` takes a SavedModel directory or a ``.tflite`` file and returns an ``LmContract``, or raises
``LmContractError`` (a ModelError: exit 2) whose one paragraph lists every problem found and the way out.
``check_signatures`` is the same check on ``SignatureInfo`` records (what a test or a converted file gives).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.serial import Record
from edge_tool.calibration.spec import SignatureInfo, TensorSpec
from edge_tool.errors import ModelError
from edge_tool.lm.spec import CACHE_LAYOUTS, SPEC_NAME, LmSpec, cache_shape, read_spec
from edge_tool.models.signatures import saved_model_signatures, tflite_signatures

DECODE = "decode"
PREFILL = re.compile(r"^prefill(?:_(\d+))?$")
CACHE = re.compile(r"^kv_cache_([kv])_(\d+)$")
WAY_OUT = (
    "An LM needs a `decode` signature and one or more `prefill`/`prefill_<T>` signatures, each taking `tokens` "
    "int32 [1, T], `input_pos` int32 [T] and `kv_cache_k_<i>`/`kv_cache_v_<i>` float32 [1, max_len, kv_heads, "
    "head_dim] (or [1, kv_heads, max_len, head_dim], LiteRT-LM's, declared as cache_layout bhsd) for every layer i, and giving `logits` float32 [1, T, vocab] and the same caches; write them with "
    "edge_tool.lm.export or by hand as docs/lm.md shows."
)


class LmContractError(ModelError):
    """A model's signatures break the LM contract; the message is one paragraph listing every problem."""


@dataclass(frozen=True)
class LmContract(Record):
    """What a contract LM's signatures say (plus its ``edgetool_lm.json`` when it has one)."""

    num_layers: int
    num_kv_heads: int
    head_dim: int
    max_len: int
    prefill_lengths: tuple[int, ...]
    prefill_keys: tuple[str, ...]  # the signature of each prefill length, same order
    vocab_size: int
    cache_dtype: str
    cache_bytes: int  # K and V of every layer, at max_len
    spec: LmSpec | None = None
    cache_layout: str = "bshd"  # spec.CACHE_LAYOUTS: the spec's, or (a .tflite alone) max_len is the longer axis

    def cache_shape(self) -> tuple[int, int, int, int]:
        """One layer's K (or V) cache as the signatures take it."""
        return cache_shape(self.cache_layout, self.max_len, self.num_kv_heads, self.head_dim)

    def described(self) -> LmSpec:
        """Its ``edgetool_lm.json``: the model's own, or for a model without one the byte-level defaults (bos 256, eos
        257 = the stop, pad 258) in the layout its caches have."""
        return self.spec or LmSpec(
            vocab_size=self.vocab_size,
            max_len=self.max_len,
            prefill_lengths=self.prefill_lengths,
            num_layers=self.num_layers,
            num_kv_heads=self.num_kv_heads,
            head_dim=self.head_dim,
            cache_layout=self.cache_layout,
        )

    @classmethod
    def of_spec(cls, spec: LmSpec) -> LmContract:
        """The contract the endpoints written from ``spec`` will have (before they are traced: what inspect shows)."""
        return cls(
            num_layers=spec.num_layers,
            num_kv_heads=spec.num_kv_heads,
            head_dim=spec.head_dim,
            max_len=spec.max_len,
            prefill_lengths=spec.prefill_lengths,
            prefill_keys=tuple(f"prefill_{t}" for t in spec.prefill_lengths),
            vocab_size=spec.vocab_size,
            cache_dtype="float32",
            cache_bytes=kv_cache_bytes(spec.num_layers, spec.max_len, spec.num_kv_heads, spec.head_dim),
            spec=spec,
            cache_layout=spec.cache_layout,
        )

    def prefill_key(self, length: int) -> str:
        """The signature key of the prefill of ``length`` tokens."""
        return self.prefill_keys[self.prefill_lengths.index(length)]


def kv_cache_bytes(layers: int, max_len: int, kv_heads: int, head_dim: int) -> int:
    """Bytes of every layer's K and V cache at ``max_len`` (float32: the contract's cache dtype)."""
    return 2 * layers * max_len * kv_heads * head_dim * 4


def looks_like_lm(signatures: tuple[SignatureInfo, ...]) -> bool:
    """True when any signature is named like the contract's (``decode``, ``prefill``, ``prefill_<T>``)."""
    return any(s.key == DECODE or PREFILL.match(s.key) for s in signatures)


def read_lm_contract(path: Path) -> LmContract:
    """The LM contract of a SavedModel directory (with its ``assets/edgetool_lm.json`` when present) or a .tflite."""
    path = Path(path)
    if path.is_dir():
        return check_signatures(saved_model_signatures(path), read_spec(path), where=str(path))
    return check_signatures(tflite_signatures(path), None, where=str(path))


def _one_dim(spec: TensorSpec, index: int):
    return spec.shape[index] if spec.shape is not None and len(spec.shape) > index else None


def _check_one(sig: SignatureInfo, expect_t: int | None, problems: list[str]) -> dict:
    """Facts of one signature (T, layers, cache shape, vocab); what breaks the contract goes to ``problems``."""
    ins = {t.name: t for t in sig.inputs}
    outs = {t.name: t for t in sig.outputs}
    say = problems.append
    for name, where in (("tokens", ins), ("input_pos", ins), ("logits", outs)):
        if name not in where:
            say(f"`{sig.key}` has no {'input' if where is ins else 'output'} `{name}`")
    tokens, pos, logits = ins.get("tokens"), ins.get("input_pos"), outs.get("logits")
    t = None
    if tokens is not None:
        if tokens.dtype != "int32" or tokens.shape is None or len(tokens.shape) != 2 or tokens.shape[0] != 1:
            say(f"`{sig.key}` input `tokens` is {tokens.dtype} {_fmt(tokens.shape)}, expected int32 [1, T]")
        t = _one_dim(tokens, 1)
        if t is None:
            say(f"`{sig.key}` input `tokens` has no fixed length T (each prefill length is its own signature)")
        elif expect_t is not None and t != expect_t:
            say(f"`{sig.key}` takes {t} tokens, but its name says {expect_t}")
    if pos is not None and (pos.dtype != "int32" or pos.shape is None or tuple(pos.shape) != (t,)):
        say(f"`{sig.key}` input `input_pos` is {pos.dtype} {_fmt(pos.shape)}, expected int32 [{t or 'T'}]")
    vocab = None
    if logits is not None:
        vocab = _one_dim(logits, 2)
        if logits.dtype != "float32" or logits.shape is None or tuple(logits.shape[:2]) != (1, t) or not vocab:
            say(f"`{sig.key}` output `logits` is {logits.dtype} {_fmt(logits.shape)}, expected float32 [1, {t}, V]")
    extra_in = sorted(set(ins) - {"tokens", "input_pos"} - {n for n in ins if CACHE.match(n)})
    extra_out = sorted(set(outs) - {"logits"} - {n for n in outs if CACHE.match(n)})
    if extra_in or extra_out:
        say(f"`{sig.key}` has tensors the contract does not know: {', '.join(extra_in + extra_out)}")
    return {"t": t, "vocab": vocab, **_check_caches(sig.key, ins, outs, say)}


def _check_caches(key: str, ins: dict, outs: dict, say) -> dict:
    cin = {n for n in ins if CACHE.match(n)}
    cout = {n for n in outs if CACHE.match(n)}
    for n in sorted(cout - cin):
        say(f"`{key}` outputs `{n}` but does not take it as an input (the cache cannot be fed back)")
    for n in sorted(cin - cout):
        say(f"`{key}` takes `{n}` but does not output it (the updated cache is lost)")
    layers = sorted({int(CACHE.match(n).group(2)) for n in cin | cout})
    kinds = {(CACHE.match(n).group(1), int(CACHE.match(n).group(2))) for n in cin | cout}
    missing = [f"kv_cache_{k}_{i}" for i in range(max(layers, default=-1) + 1) for k in "kv" if (k, i) not in kinds]
    if missing:
        say(f"`{key}` lacks {', '.join(missing)} (layers are numbered 0..L-1, each with a K and a V cache)")
    if not layers:
        say(f"`{key}` has no `kv_cache_k_<i>`/`kv_cache_v_<i>` tensors")
    shapes = set()
    for n in sorted(cin | cout):
        spec = ins.get(n) or outs.get(n)
        shape = tuple(spec.shape) if spec.shape is not None else None
        if spec.dtype != "float32" or shape is None or len(shape) != 4 or shape[0] != 1 or None in shape:
            say(
                f"`{key}` `{n}` is {spec.dtype} {_fmt(spec.shape)}, expected float32 [1, max_len, kv_heads, head_dim]"
                " (or [1, kv_heads, max_len, head_dim])"
            )
        shapes.add((spec.dtype, shape))
    if len(shapes) > 1:
        say(f"`{key}`'s caches differ in dtype or shape ({', '.join(sorted(f'{d} {_fmt(s)}' for d, s in shapes))})")
    return {"layers": len(layers), "cache": next(iter(shapes)) if len(shapes) == 1 else None}


def _fmt(shape) -> str:
    return "of unknown rank" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def check_signatures(signatures: tuple[SignatureInfo, ...], spec: LmSpec | None, where: str) -> LmContract:
    """The ``LmContract`` of these signatures, or LmContractError listing every way they break the contract."""
    problems: list[str] = []
    by_key = {s.key: s for s in signatures}
    prefills = sorted((k for k in by_key if PREFILL.match(k)), key=lambda k: (len(k), k))
    if DECODE not in by_key:
        problems.append("there is no `decode` signature")
    if not prefills:
        problems.append("there is no `prefill` or `prefill_<T>` signature")
    facts = {k: _check_one(by_key[k], _named_t(k, k == DECODE), problems) for k in [*prefills, DECODE] if k in by_key}
    for fact_name, label in (("layers", "number of layers"), ("cache", "cache"), ("vocab", "vocabulary")):
        seen = {str(f[fact_name]) for f in facts.values() if f[fact_name]}
        if len(seen) > 1:
            problems.append(f"the signatures disagree on the {label} ({', '.join(sorted(seen))})")
    lengths = [facts[k]["t"] for k in prefills]
    if len(set(lengths)) != len(lengths):
        problems.append(f"two prefill signatures take the same length ({', '.join(prefills)})")
    contract = None if problems else _contract(facts, prefills, spec)
    if contract is not None and spec is not None:
        problems += _spec_problems(contract, spec)
    if problems:
        found = ", ".join(s.key for s in signatures) or "no signatures"
        raise LmContractError(
            f"{where} does not follow edgetool's LM contract (it has {found}): " + "; ".join(problems) + ". " + WAY_OUT
        )
    return contract


def _named_t(key: str, is_decode: bool) -> int | None:
    if is_decode:
        return 1
    m = PREFILL.match(key)
    return int(m.group(1)) if m and m.group(1) else None


def _layout(shape: tuple, spec: LmSpec | None) -> str:
    """The spec's cache layout; without a spec (a .tflite alone) max_len is the longer of axes 1 and 2."""
    if spec is not None:
        return spec.cache_layout
    return "bhsd" if shape[2] > shape[1] else "bshd"


def _contract(facts: dict, prefills: list[str], spec: LmSpec | None) -> LmContract:
    dtype, shape = facts[DECODE]["cache"]
    layout = _layout(shape, spec)
    _, max_len, heads, head_dim = (shape[0], shape[2], shape[1], shape[3]) if layout == "bhsd" else shape
    layers = facts[DECODE]["layers"]
    order = sorted(prefills, key=lambda k: facts[k]["t"])
    return LmContract(
        num_layers=layers,
        num_kv_heads=heads,
        head_dim=head_dim,
        max_len=max_len,
        prefill_lengths=tuple(facts[k]["t"] for k in order),
        prefill_keys=tuple(order),
        vocab_size=facts[DECODE]["vocab"],
        cache_dtype=dtype,
        cache_bytes=kv_cache_bytes(layers, max_len, heads, head_dim),
        spec=spec,
        cache_layout=layout,
    )


def _spec_problems(c: LmContract, spec: LmSpec) -> list[str]:
    pairs = {
        "vocab_size": (spec.vocab_size, c.vocab_size),
        "max_len": (spec.max_len, c.max_len),
        "num_layers": (spec.num_layers, c.num_layers),
        "num_kv_heads": (spec.num_kv_heads, c.num_kv_heads),
        "head_dim": (spec.head_dim, c.head_dim),
        "prefill_lengths": (tuple(sorted(spec.prefill_lengths)), c.prefill_lengths),
    }
    problems = [
        f"{SPEC_NAME} says {name} {said} but the signatures say {found}"
        for name, (said, found) in pairs.items()
        if said != found
    ]
    if problems and (spec.max_len, spec.num_kv_heads) == (c.num_kv_heads, c.max_len):
        other = next(k for k in CACHE_LAYOUTS if k != spec.cache_layout)
        problems.append(
            f"the caches are {list(c.cache_shape())} read as cache_layout {spec.cache_layout} "
            f"({CACHE_LAYOUTS[spec.cache_layout]}); they fit cache_layout {other} ({CACHE_LAYOUTS[other]}): "
            f'say "cache_layout": "{other}" in {SPEC_NAME}'
        )
    return problems


def describe(c: LmContract) -> list[tuple[str, str]]:
    """(label, value) rows of what ``edgetool inspect`` shows of a contract LM."""
    per_token = c.cache_bytes // c.max_len
    rows = [
        ("layers", str(c.num_layers)),
        ("key/value heads × head_dim", f"{c.num_kv_heads} × {c.head_dim}"),
        ("max length", f"{c.max_len} tokens"),
        ("cache layout", f"{c.cache_layout} {CACHE_LAYOUTS[c.cache_layout]}"),
        ("prefill lengths", ", ".join(f"{t} ({k})" for t, k in zip(c.prefill_lengths, c.prefill_keys))),
        ("vocabulary", f"{c.vocab_size} logits"),
        ("KV cache", f"{c.cache_bytes:,} bytes {c.cache_dtype} at max length ({per_token:,} bytes per token)"),
    ]
    if c.spec is not None:
        s = c.spec
        rows.append(
            (
                "tokenizer",
                f"{s.tokenizer}{' (tokenizer.json checked against it)' if s.tokenizer == 'bpe' else ''}; "
                f"bos {s.bos_id}, eos {s.eos_id}, pad {s.pad_id}, stop {list(s.stop_ids)}",
            )
        )
        d = s.sampler
        rows.append(("sampler defaults", f"temperature {d.temperature}, top-k {d.top_k}, seed {d.seed}, kind {d.kind}"))
    else:
        rows.append(("edgetool_lm.json", "none (a .tflite carries it in convert's manifest; docs/lm.md)"))
    return rows
