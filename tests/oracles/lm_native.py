"""The native side of the LM page's tests and benchmark: generation with ai_edge_litert's signature runners on a
.tflite that follows edgetool's LM contract, the caches fed from each call's outputs to the next call's inputs.

It mirrors web_demo/lm/generate.js (chunking), lm/sampler.js (greedy, xorshift32 seeded sampling) and
lm/tokenizer.js (bos + UTF-8 bytes) line by line, as the independent oracle the page is compared with. Temporary:
``edge_tool.lm``'s generation helper and PRNG replace it when they land (the same algorithm, docs/lm.md)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
    row = [float(v) for v in logits]
    if not temperature > 0:
        return int(np.argmax(np.asarray(logits)))  # numpy: the first (lowest) index on ties
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
    return [bos_id, *text.encode("utf-8")]


def plan_chunk(remaining: int, pos: int, prefill: list[tuple[str, int]], max_len: int) -> tuple[str, int, int]:
    """(signature, its length, tokens it takes): as lm/generate.js's planChunk."""
    fits = [(n, t) for n, t in prefill if pos + t <= max_len]
    if remaining == 1 or not fits:
        return "decode", 1, 1
    name, t = next(((n, t) for n, t in fits if t >= remaining), fits[-1])
    return name, t, min(remaining, t)


@dataclass
class Generation:
    tokens: list[int] = field(default_factory=list)
    reason: str = "max tokens"
    ttft_ms: float = 0.0
    decode_ms: list[float] = field(default_factory=list)  # each decode call


class NativeLM:
    """One .tflite loaded once; ``generate`` runs the page's loop natively."""

    def __init__(self, tflite: Path, lm: dict, threads: int = 1) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.interp = Interpreter(model_path=str(tflite), num_threads=threads)
        self.lm = lm
        self.runners = {s["name"]: self.interp.get_signature_runner(s["name"]) for s in lm["prefill"]}
        self.runners["decode"] = self.interp.get_signature_runner(lm["decode"])

    def _call(self, caches: dict, pos: int, name: str, length: int, chunk: list[int]) -> tuple[dict, np.ndarray]:
        lm = self.lm
        tokens = np.full([1, length], lm["padId"], np.int32)
        tokens[0, : len(chunk)] = chunk
        positions = np.minimum(np.arange(pos, pos + length, dtype=np.int32), lm["maxLen"] - 1)
        out = self.runners[name](tokens=tokens, input_pos=positions, **caches)
        return {n: out[n] for n in lm["caches"]}, out["logits"][0, len(chunk) - 1]

    def generate(self, ids: list[int], max_new: int, temperature=0.0, top_k=0, seed=0) -> Generation:
        lm = self.lm
        caches = {n: np.zeros(lm["cacheShape"], np.float32) for n in lm["caches"]}
        prefill = [(s["name"], s["length"]) for s in lm["prefill"]]
        rng, result, pos = Xorshift32(seed), Generation(), 0
        start = time.perf_counter()
        while pos < len(ids):
            name, length, count = plan_chunk(len(ids) - pos, pos, prefill, lm["maxLen"])
            caches, logits = self._call(caches, pos, name, length, ids[pos : pos + count])
            pos += count
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
            if pos >= lm["maxLen"]:
                result.reason = "context full"
                break
            t = time.perf_counter()
            caches, logits = self._call(caches, pos, "decode", 1, [tok])
            result.decode_ms.append(1000 * (time.perf_counter() - t))
            pos += 1
        return result
