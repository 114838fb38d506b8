"""Perplexity of a contract LM on held-out text, through an ``LmSession`` (any runtime): the text as byte ids, cut
into windows of max_len tokens each starting with ``<bos>`` on empty caches, every next token scored teacher-forced.

One place for it (convert's ``--quant auto`` for LMs uses it; eval's perplexity should too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from edge_tool.errors import DataError, UsageError
from edge_tool.lm.session import LmSession
from edge_tool.lm.spec import LmSpec


def byte_ids(text: str, spec: LmSpec | None) -> list[int]:
    """``text`` as the byte tokenizer's ids (UTF-8 bytes); UsageError for a model with another tokenizer."""
    if spec is not None and spec.tokenizer != "byte":
        raise UsageError(f"Perplexity on text needs the byte tokenizer; this model's is {spec.tokenizer!r}.")
    return list(text.encode("utf-8"))


def token_nll(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """Negative log-likelihood (nats) of each target under the row of ``logits`` [n, V] before it."""
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -log_probs[np.arange(len(targets)), np.asarray(targets)]


def perplexity(session: LmSession, ids: Sequence[int], max_tokens: int = 4096) -> float:
    """exp(mean NLL) over the first ``max_tokens`` ids, scored in windows of max_len (``<bos>`` first in each)."""
    bos = session.contract.spec.bos_id if session.contract.spec is not None else None
    ids = list(ids)[:max_tokens]
    width = session.contract.max_len - (bos is not None)
    nll = []
    for start in range(0, len(ids), width):
        window = ([bos] if bos is not None else []) + ids[start : start + width]
        if len(window) < 2:
            continue
        session.reset()
        nll.append(token_nll(session.feed(window[:-1]), window[1:]))
    if not nll:
        raise DataError(f"The held-out text gives {len(ids)} tokens; perplexity needs at least 2.")
    return float(math.exp(np.concatenate(nll).mean()))
