"""What the LM page (``demo --task lm``) needs to know of a language-model .tflite that follows edgetool's LM contract
(docs/lm.md; LiteRT-LM's names): its ``prefill_<T>``/``prefill`` and ``decode`` signatures, the caches' shape, the
vocabulary, and the tokenizer and sampler of its description (``edgetool_lm.json`` beside the file; without one the
contract's byte-level defaults, everything else read off the signatures). Checked before anything is written.

Temporary reader: the validation and description record of ``edge_tool.lm`` replace it when they land."""

from __future__ import annotations

import json
import re
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.litert.runtime import load_interpreter

DESCRIPTION = "edgetool_lm.json"
DECODE = "decode"
_PREFILL = re.compile(r"^prefill(?:_(\d+))?$")
_CACHE = re.compile(r"^kv_cache_([kv])_(\d+)$")
# the contract's byte-level tokenizer: ids 0..255 are UTF-8 bytes, then the specials
BYTE_DEFAULTS = {"tokenizer": "byte", "bos_id": 256, "eos_id": 257, "pad_id": 258}
SAMPLER_DEFAULTS = {"temperature": 0.0, "top_k": 0, "seed": 0}


def is_lm_tflite(path: Path) -> bool:
    """True when ``path`` is a .tflite file with a ``decode`` signature and at least one prefill signature."""
    path = Path(path)
    if not (path.is_file() and path.suffix == ".tflite"):
        return False
    names = set(load_interpreter(path, allocate=False).get_signature_list())
    return DECODE in names and any(_PREFILL.match(n) for n in names)


def _io_shapes(runner) -> tuple[dict, dict]:
    def shapes(details):
        return {k: ([int(d) for d in v["shape"]], v["dtype"].__name__) for k, v in details.items()}

    return shapes(runner.get_input_details()), shapes(runner.get_output_details())


def _signature_problems(name: str, t: int, ins: dict, outs: dict) -> tuple[list[str], dict]:
    """Problems of one signature against the contract; its cache names -> shape."""
    problems = []
    caches = {k: s for k, (s, _) in ins.items() if _CACHE.match(k)}
    expect = {"tokens": ([1, t], "int32"), "input_pos": ([t], "int32")}
    for key, (shape, dtype) in expect.items():
        if ins.get(key) != (shape, dtype):
            problems.append(f"{name}: input {key} should be {dtype} {shape}, found {ins.get(key, 'nothing')}")
    extra = set(ins) - set(expect) - set(caches)
    if extra:
        problems.append(f"{name}: inputs {sorted(extra)} are not in the contract")
    if not caches:
        problems.append(f"{name}: no kv_cache_k_<i>/kv_cache_v_<i> inputs (the page keeps the cache between calls)")
    for key, shape in caches.items():
        if outs.get(key, (None,))[0] != shape:
            problems.append(f"{name}: cache {key} is an input without the same output (the cache cannot be fed back)")
    logits = outs.get("logits")
    if logits is None or len(logits[0]) != 3 or logits[0][:2] != [1, t] or logits[1] != "float32":
        problems.append(f"{name}: output logits should be float32 [1, {t}, vocab], found {logits or 'nothing'}")
    return problems, caches


def read_lm(path: Path) -> dict:
    """The page's ``lm`` entry for ``path``: prefill lengths, max_len, layers, cache shape, vocabulary, tokenizer ids,
    stop ids and sampler defaults; ModelError with every contract problem found."""
    path = Path(path)
    interp = load_interpreter(path)
    names = list(interp.get_signature_list())
    prefill = {n: int(m.group(1)) if m.group(1) else None for n in names if (m := _PREFILL.match(n))}
    problems = [] if DECODE in names else [f"no '{DECODE}' signature (found {names})"]
    problems += [] if prefill else [f"no 'prefill' or 'prefill_<T>' signature (found {names})"]
    signatures, cache_sets = [], []
    for name in [*prefill, DECODE] if DECODE in names else list(prefill):
        ins, outs = _io_shapes(interp.get_signature_runner(name))
        t = 1 if name == DECODE else prefill[name] or ins.get("tokens", ([1, 0], ""))[0][-1]
        found, caches = _signature_problems(name, t, ins, outs)
        problems += found
        cache_sets.append(caches)
        if name != DECODE:
            signatures.append({"name": name, "length": t})
        vocab = outs.get("logits", ([0, 0, 0], ""))[0][-1]
    if any(c != cache_sets[0] for c in cache_sets):
        problems.append("the signatures' caches differ in names or shapes")
    caches = cache_sets[0] if cache_sets else {}
    shapes = {tuple(s) for s in caches.values()}
    if len(shapes) > 1 or any(len(s) != 4 or s[0] != 1 for s in shapes):
        problems.append(f"caches should all be float32 [1, max_len, kv_heads, head_dim], found {sorted(shapes)}")
    if problems:
        raise ModelError(
            f"{path} does not follow edgetool's language-model contract (docs/lm.md): " + "; ".join(problems) + ". "
            "Export the model with the contract's prefill/decode signatures, or drop --task lm."
        )
    max_len, heads, head_dim = next(iter(shapes))[1:]
    desc = _description(path)
    return {
        "prefill": sorted(signatures, key=lambda s: s["length"]),
        "decode": DECODE,
        "caches": sorted(caches),
        "cacheShape": [1, max_len, heads, head_dim],
        "maxLen": max_len,
        "numLayers": len(caches) // 2,
        "vocabSize": vocab,
        "cacheBytes": 4 * max_len * heads * head_dim * len(caches),
        **_tokenizer(desc, vocab, path),
    }


def _description(path: Path) -> dict:
    """``edgetool_lm.json`` beside the .tflite ({} when there is none); ModelError when it is not a JSON object."""
    file = path.parent / DESCRIPTION
    if not file.is_file():
        return {}
    try:
        desc = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{file} is not valid JSON ({exc}); fix it or remove it (the byte defaults apply).") from None
    if not isinstance(desc, dict):
        raise ModelError(f"{file} should hold a JSON object (edgetool's LM description), found {type(desc).__name__}.")
    return desc


def _tokenizer(desc: dict, vocab: int, path: Path) -> dict:
    """The tokenizer and sampler entries of the page config; the page ships the byte-level tokenizer only."""
    merged = {**BYTE_DEFAULTS, **{k: desc[k] for k in BYTE_DEFAULTS if k in desc}}
    if merged["tokenizer"] != "byte":
        raise ModelError(
            f"{path}'s description names the {merged['tokenizer']!r} tokenizer; the page runs the byte-level one "
            "only (ids 0..255 = UTF-8 bytes). Use a byte-level model for the demo."
        )
    ids = {k: merged[k] for k in ("bos_id", "eos_id", "pad_id")}
    stop = desc.get("stop_ids", [ids["eos_id"]])
    bad = [f"{k}={v}" for k, v in {**ids, **{f"stop_ids[{i}]": s for i, s in enumerate(stop)}}.items()]
    bad = [b for b, v in zip(bad, [*ids.values(), *stop]) if not (isinstance(v, int) and 256 <= v < vocab)]
    if bad or vocab < 256:
        raise ModelError(
            f"{path}: the byte-level tokenizer needs a vocabulary of 256 bytes plus specials below {vocab}; "
            f"{', '.join(bad) or f'vocabulary {vocab}'} is out of range. Fix {DESCRIPTION} beside the model."
        )
    sampler = {**SAMPLER_DEFAULTS, **(desc.get("sampler") or {})}
    return {
        "tokenizer": "byte",
        "bosId": ids["bos_id"],
        "eosId": ids["eos_id"],
        "padId": ids["pad_id"],
        "stopIds": stop,
        "sampler": {k: sampler[k] for k in SAMPLER_DEFAULTS},
    }
