"""What the LM page (``demo --task lm``) needs to know of a language-model .tflite: its contract (``edge_tool.lm``:
``prefill_<T>`` and ``decode`` signatures, the caches' shape, the vocabulary) and its description
(``edgetool_lm.json`` beside the file; without one the contract's byte-level defaults) and its tokenizer (a BPE's
``tokenizer.json`` beside the file, which the page's JS reads: web_demo/lm/bpe.js), as the page config's ``lm``
entry. Checked before anything is written."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.lm.contract import DECODE, check_signatures, looks_like_lm
from edge_tool.lm.spec import SPEC_NAME, LmSpec, parse_spec
from edge_tool.lm.tokenizer.registry import TOKENIZER_FILE, TOKENIZERS, load_tokenizer, tokenizer_folder
from edge_tool.models.signatures import tflite_signatures

BYTES = 256  # the byte-level tokenizer's ids 0..255 are UTF-8 bytes; specials come after


def is_lm_tflite(path: Path) -> bool:
    """True when ``path`` is a .tflite file with signatures named like the LM contract's."""
    path = Path(path)
    return path.is_file() and path.suffix == ".tflite" and looks_like_lm(tflite_signatures(path))


def _beside_spec(path: Path) -> LmSpec | None:
    """``edgetool_lm.json`` beside the .tflite (as ``convert --task lm`` and the tests write it), or None."""
    file = path.parent / SPEC_NAME
    return parse_spec(file.read_text(encoding="utf-8", errors="replace"), str(file)) if file.is_file() else None


def _tokenizer_problems(spec: LmSpec) -> list[str]:
    if spec.tokenizer != "byte":
        return []  # a shipped tokenizer.json: checked against the spec by load_tokenizer
    ids = {"bos_id": spec.bos_id, "eos_id": spec.eos_id, "pad_id": spec.pad_id, "stop_ids": spec.stop_ids}
    clash = [f"{k} {v}" for k, v in ids.items() if any(i < BYTES for i in (v if isinstance(v, tuple) else (v,)))]
    return [f"{', '.join(clash)} fall among the byte ids 0..255 (the specials come after them)"] if clash else []


def read_lm(path: Path) -> dict:
    """The page's ``lm`` entry for the .tflite ``path``: its signatures, cache names and shape, vocabulary,
    tokenizer ids, stop ids and sampler defaults; LmContractError / ModelError (exit 2) on what the page cannot run."""
    path = Path(path)
    given = _beside_spec(path)
    contract = check_signatures(tflite_signatures(path), given, str(path))
    spec = given or contract.described()
    problems = _tokenizer_problems(spec)
    if problems:
        raise ModelError(
            f"The LM page cannot tokenize for {path}: {'; '.join(problems)}. Give it a byte-level model, or fix "
            f"{SPEC_NAME} beside it."
        )
    tokenizer_file = None
    if TOKENIZERS[spec.tokenizer].ships_file:
        load_tokenizer(spec, tokenizer_folder(path))  # ModelError: missing, or not the BPE the page implements
        tokenizer_file = str(tokenizer_folder(path) / TOKENIZER_FILE)
    shape = list(spec.cache_shape())
    return {
        "prefill": [{"name": k, "length": t} for k, t in zip(contract.prefill_keys, contract.prefill_lengths)],
        "decode": DECODE,
        "caches": [f"kv_cache_{kv}_{i}" for i in range(contract.num_layers) for kv in "kv"],
        "cacheShape": shape,
        "maxLen": contract.max_len,
        "numLayers": contract.num_layers,
        "vocabSize": contract.vocab_size,
        "cacheBytes": contract.cache_bytes,
        "tokenizer": spec.tokenizer,
        "tokenizerFile": tokenizer_file,  # the site's copy: tokenizerUrl (demo.lm_site)
        "bosId": spec.bos_id,
        "eosId": spec.eos_id,
        "padId": spec.pad_id,
        "stopIds": list(spec.stop_ids),
        "sampler": {
            "temperature": spec.sampler.temperature,
            "top_k": spec.sampler.top_k,
            "seed": spec.sampler.seed,
            "kind": spec.sampler.kind,
        },
        "described": given is not None,
    }
