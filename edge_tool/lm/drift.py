"""An LM artefact against its reference: perplexity drift, mean KL of the next-token distributions, teacher-forced
next-token agreement, |Δlogit| at prefill and at decode positions (a cache bug shows as decode-only error), the
match of greedy and seeded continuations, and the summary of ``measure.timings``. Plain dicts of floats: the eval
report's ``metrics`` / ``drift`` of the ``lm`` task (edge_tool/tasks/lm.py names the keys)."""

from __future__ import annotations

import numpy as np

from edge_tool.lm.measure import log_softmax, perplexity


def _max_abs(d: np.ndarray, mask: np.ndarray) -> float | None:
    return float(d[mask].max()) if mask.any() else None


def logit_drift(ref: np.ndarray, art: np.ndarray, decode: np.ndarray, targets: np.ndarray) -> dict:
    """Drift of teacher-forced ``art`` logits [n, V] against ``ref`` (same positions; ``decode`` marks decode rows)."""
    if ref.shape != art.shape:
        raise ValueError(f"logits of shape {art.shape} against the reference's {ref.shape}")
    lp_ref, lp_art = log_softmax(ref), log_softmax(art)
    kl = (np.exp(lp_ref) * (lp_ref - lp_art)).sum(-1)
    delta = np.abs(np.asarray(art, np.float64) - np.asarray(ref, np.float64)).max(-1)
    ppl_ref, ppl_art = perplexity(ref, targets), perplexity(art, targets)
    return {
        "perplexity_drift": ppl_art / ppl_ref - 1.0,
        "mean_kl": float(kl.mean()),
        "next_token_agreement": float((ref.argmax(-1) == art.argmax(-1)).mean()),
        "max_abs_logit_prefill": _max_abs(delta, ~decode),
        "max_abs_logit_decode": _max_abs(delta, decode),
        "logit_scale": float(np.abs(ref).max()),
    }


def continuation_match(ref: list, art: list) -> dict:
    """Exact matches (N of M prompts) and the mean length of the common prefix of each pair of continuations."""
    prefixes = []
    for a, b in zip(ref, art):
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        prefixes.append(k)
    return {
        "exact": sum(1 for a, b in zip(ref, art) if list(a) == list(b)),
        "prompts": len(ref),
        "mean_prefix": float(np.mean(prefixes)) if prefixes else None,
        "mean_length": float(np.mean([len(a) for a in ref])) if ref else None,
    }


def _ms(ns: list) -> dict:
    a = np.asarray(ns, np.float64) / 1e6
    return {"median": float(np.median(a)), "p90": float(np.percentile(a, 90)), "runs": int(a.size)}


def speed(timed: dict) -> dict:
    """TTFT ms (median, p90) per prefill length and decode tokens/s (from the median and p90 step) at short and
    near-full context, from ``measure.timings``' raw ns."""
    out = {"ttft_ms": {t: _ms(v) for t, v in timed["ttft_ns"].items()}}
    for name, key in (("short", "decode_short_ns"), ("full", "decode_full_ns")):
        ms = _ms(timed[key])
        out[f"decode_{name}"] = {
            "tokens_per_s": 1000.0 / ms["median"],
            "tokens_per_s_p90": 1000.0 / ms["p90"],
            "step_ms": ms,
            "position": int(timed["positions"][0 if name == "short" else 1]),
        }
    return out
