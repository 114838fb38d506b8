"""The native side of the LM page's tests and benchmark: generation over ai_edge_litert's signature runners
(``edge_tool.lm.session``: the caches fed from each call's outputs to the next call's inputs, its chunking rule),
with the byte tokenizer and the shared sampler written out here as the page's documented algorithm
(web_demo/lm/sampler.js, tokenizer.js) — the independent oracle the page is compared with.

The sampler belongs in ``edge_tool.lm`` once its generation helper lands (the same algorithm, docs/lm.md)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.session import LmSession, tflite_call

ZERO_SEED = 0x9E3779B9
MASK = 0xFFFFFFFF


class Xorshift32:
    """xorshift32 (13, 17, 5); seed mod 2^32, 0 replaced; ``uniform`` has 24 bits in [0, 1)."""

    def __init__(self, seed: int) -> None:
        self.x = (int(seed) & MASK) or ZERO_SEED

    def next(self) -> int:
        x = self.x
        x ^= (x << 13) & MASK
        x ^= x >> 17
        x ^= (x << 5) & MASK
        self.x = x
        return x

    def uniform(self) -> float:
        return (self.next() >> 8) / 16777216


def sample(logits: np.ndarray, temperature: float, top_k: int, rng: Xorshift32) -> int:
    """Greedy (argmax, lowest id on ties) at temperature <= 0, else top-k/temperature with one uniform draw."""
    if not temperature > 0:
        return int(np.argmax(np.asarray(logits)))  # numpy: the first (lowest) index on ties
    row = [float(v) for v in logits]
    ids = sorted(range(len(row)), key=lambda i: (-row[i], i))
    if 0 < top_k < len(ids):
        ids = ids[:top_k]
    top = row[ids[0]]
    weights = [math.exp((row[i] - top) / temperature) for i in ids]
    threshold = rng.uniform() * sum(weights)
    total = 0.0
    for i, w in zip(ids, weights):
        total += w
        if total > threshold:
            return i
    return ids[-1]


def encode(text: str, bos_id: int) -> list[int]:
    """bos, then the UTF-8 bytes."""
    return [bos_id, *text.encode("utf-8")]


@dataclass
class Generation:
    tokens: list[int] = field(default_factory=list)
    reason: str = "max tokens"
    ttft_ms: float = 0.0
    decode_ms: list[float] = field(default_factory=list)  # each decode call


def generate(
    session: LmSession, lm: dict, ids: list[int], max_new: int, temperature=0.0, top_k=0, seed=0
) -> Generation:
    """The page's loop (web_demo/lm/generate.js) on ``session``; ``lm``: the page config's ``lm`` entry."""
    session.reset()
    rng, result = Xorshift32(seed), Generation()
    start = time.perf_counter()
    logits = session.feed(ids)[-1]
    while len(result.tokens) < max_new:
        tok = sample(logits, temperature, top_k, rng)
        result.tokens.append(tok)
        if len(result.tokens) == 1:
            result.ttft_ms = 1000 * (time.perf_counter() - start)
        if tok in lm["stopIds"]:
            result.reason = "stop token"
            break
        if len(result.tokens) >= max_new:
            break
        if session.position >= lm["maxLen"]:
            result.reason = "context full"
            break
        t = time.perf_counter()
        logits = session.decode(tok)
        result.decode_ms.append(1000 * (time.perf_counter() - t))
    return result


def native_session(tflite: Path, threads: int = 1) -> LmSession:
    """An LmSession on the .tflite's signature runners (XNNPACK, ``threads`` threads)."""
    return LmSession(tflite_call(Path(tflite), threads), read_lm_contract(Path(tflite)))
