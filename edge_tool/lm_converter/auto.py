"""``--quant auto`` for a language model: every LM mode is built and self-checked, then each file's perplexity on
the held-out text is measured in LiteRT with eval's own computation (``lm.measure``: the same windows, the same
teacher-forced logits, the one perplexity) against the fp32 file's; the smallest file whose perplexity rose at most
``--max-drop`` (relative) is chosen."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from edge_tool.core.steps import step
from edge_tool.lm.contract import LmContract
from edge_tool.lm.measure import perplexity, targets_of, teacher_forced
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.lm.tokenizer.registry import Tokenizer
from edge_tool.schemas.manifest import ManifestArtifact

MAX_TOKENS = 4096  # held-out tokens scored per file (the first ones)


def choose(built: list[ManifestArtifact], out: Path, contract: LmContract, tokenizer: Tokenizer, text: Path, max_drop):
    """(the entries with their perplexity, the ``lm_choice`` record); DataError for unreadable text. The text is
    tokenized with the model's ``tokenizer``."""
    spec = contract.spec
    ids = tokenizer.encode(text.read_text(encoding="utf-8"))[:MAX_TOKENS]
    bos = spec.bos_id if spec is not None else None
    measured = {}
    for entry in built:
        with step(f"perplexity {entry.quant} on {len(ids)} held-out tokens"):
            session = LmSession(tflite_call(out / entry.path), contract)
            logits, _ = teacher_forced(session, ids, contract.max_len, bos)
            measured[entry.quant] = perplexity(logits, targets_of(ids, contract.max_len, bos))
    base = measured.get("fp32")
    entries = [_with_ppl(e, measured[e.quant], base) for e in built]
    within = [e for e in entries if e.quant != "fp32" and e.lm.perplexity_increase <= max_drop]
    chosen = min(within, key=lambda e: e.size_bytes).quant if within else None
    record = {
        "chosen": chosen,
        "max_drop": max_drop,
        "text": str(text),
        "tokens": len(ids),
        "baseline_perplexity": base,
    }
    return entries, record


def _with_ppl(entry: ManifestArtifact, ppl: float, base: float) -> ManifestArtifact:
    lm = dataclasses.replace(entry.lm, perplexity=round(ppl, 6), perplexity_increase=round(ppl / base - 1.0, 6))
    return dataclasses.replace(entry, lm=lm)


def choice_lines(entries: list[ManifestArtifact], record: dict) -> list[str]:
    """What the terminal says: one line per file, then the choice (or why there is none)."""
    lines = [
        f"  {e.quant:<20} {e.size_bytes / 1024:9.1f} KiB  perplexity {e.lm.perplexity:.4f} "
        f"({e.lm.perplexity_increase:+.3%})"
        for e in entries
    ]
    drop = f"{record['max_drop']:.2%}"
    if record["chosen"]:
        lines.append(f"chosen: {record['chosen']} (the smallest file within +{drop} perplexity over fp32)")
    else:
        lines.append(f"no quantized mode kept perplexity within +{drop} of fp32's; ship fp32 or raise --max-drop")
    return lines
