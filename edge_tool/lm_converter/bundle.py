"""``--litertlm``: each converted mode packed as ``<stem>_<mode>.litertlm`` (``litertlm``) and checked where it will
run: LiteRT-LM's engine must continue a prompt greedily exactly as edgetool's own session does on the mode's .tflite.
A bundle that does not is not written (the mode's failure says why)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np

from edge_tool.core.env import installed_version
from edge_tool.core.steps import step
from edge_tool.errors import ConversionError
from edge_tool.lm.contract import LmContract
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.lm.spec import LmSpec
from edge_tool.lm.tokenizer.registry import Tokenizer
from edge_tool.lm_converter.build import build_mode, convert_signatures
from edge_tool.lm_converter.litertlm import (
    GREEDY_TOKENS,
    LAYOUT_NATIVE,
    LAYOUT_TRANSPOSED,
    PROMPT,
    SEEDED_NOT_COMPARED,
    cache_transposed_saved_model,
    engine_greedy,
    write_bundle,
)
from edge_tool.parsers.tree import content_hash
from edge_tool.schemas.manifest import ManifestArtifact


def greedy_text(
    tflite: Path, contract: LmContract, spec: LmSpec, tokenizer: Tokenizer, prompt: str = PROMPT, session=None
) -> str:
    """edgetool's greedy continuation of ``prompt`` on ``tflite`` (or in ``session``: <bos> first, stop ids end
    it), as UTF-8 text (``tokenizer``: the model's)."""
    session = session or LmSession(tflite_call(tflite), contract)
    token = int(np.argmax(session.feed([spec.bos_id, *tokenizer.encode(prompt)])[-1]))
    out = []
    for _ in range(GREEDY_TOKENS):
        if token in spec.stop_ids:
            break
        out.append(token)
        token = int(np.argmax(session.decode(token)))
    return tokenizer.decode(out)


def bundle_all(config, contract: LmContract, spec: LmSpec, tokenizer: Tokenizer, keys: tuple, built: list, out: Path):
    """(entries with their ``litertlm`` record, failures by ``litertlm-<mode>``); ConversionError without keep_going."""
    entries, failed = [], {}
    with tempfile.TemporaryDirectory(prefix="edgetool-litertlm-") as tmp:
        work = Path(tmp)
        fp32 = None  # the model has LiteRT-LM's cache layout already (cache_layout bhsd): each mode's file as it is
        if contract.cache_layout != "bhsd":
            with step("LiteRT-LM layout: caches [1, kv_heads, max_len, head_dim], transposed at each call's edge"):
                cache_transposed_saved_model(config.model, keys, contract, work / "layout")
                fp32 = convert_signatures(work / "layout", keys, "fp32")
        for entry in built:
            try:
                entries.append(_one(entry, contract, spec, tokenizer, keys, out, work, fp32))
            except ConversionError as exc:
                if not config.keep_going:
                    raise
                failed[f"litertlm-{entry.quant}"] = " ".join(str(exc).split())
                entries.append(entry)
    return entries, failed


def _one(entry: ManifestArtifact, contract, spec, tokenizer, keys, out: Path, work: Path, fp32) -> ManifestArtifact:
    """One mode's bundle (``fp32``: the transposed-layout fp32 file, or None when the mode's own file is used)."""
    mode = entry.quant
    if fp32 is None:
        data = (out / entry.path).read_bytes()
    else:
        data = fp32 if mode == "fp32" else build_mode(mode, work / "layout", keys, fp32, contract.vocab_size).data
    (work / f"{mode}.tflite").write_bytes(data)
    bundle = out / (Path(entry.path).stem + ".litertlm")
    with step(f"pack {bundle.name} and run it in LiteRT-LM"):
        write_bundle(work / f"{mode}.tflite", spec, tokenizer.hf_json(), bundle, work)
        engine = engine_greedy(bundle, spec)
    ours = greedy_text(out / entry.path, contract, spec, tokenizer)
    if engine != ours:
        bundle.unlink()
        raise ConversionError(
            f"{bundle.name}: LiteRT-LM's greedy continuation of {PROMPT!r} is {engine!r}, edgetool's on {entry.path} "
            f"is {ours!r}; the bundle is not written."
        )
    record = {
        "path": bundle.name,
        "size_bytes": bundle.stat().st_size,
        "sha256": content_hash(bundle),
        "engine": f"litert-lm-api {installed_version('litert-lm-api')}",
        "cache_layout": LAYOUT_TRANSPOSED if fp32 is not None else LAYOUT_NATIVE,
        "prompt": PROMPT,
        "greedy_text": engine,
        "greedy_match": True,
        "seeded_sampling": SEEDED_NOT_COMPARED,
    }
    return dataclasses.replace(entry, lm=dataclasses.replace(entry.lm, litertlm=record))
