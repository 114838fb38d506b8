"""Token choice that every runtime reproduces exactly (docs/lm.md "Sampling"): greedy, or seeded temperature/top-k
sampling driven by ``Xorshift32``, a 32-bit PRNG written the same way in Python and in the page's JS.

- Seeding: ``state = mix32(seed)`` where mix32 is the splitmix32 finaliser of ``seed + 0x9E3779B9`` (a zero result
  becomes 0x6D2B79F5, since xorshift never leaves 0).
- Step: ``x ^= x << 13; x ^= x >> 17; x ^= x << 5`` (all mod 2**32); ``uniform() = (x >> 8) / 2**24`` (24 bits: exact
  in float32 and float64).
- Greedy (temperature 0): the argmax, the lowest id on ties; no number is drawn.
- Sampling: candidates are the ids ordered by logit, highest first (ties: lower id first), cut to ``top_k`` when
  top_k > 0; weights ``exp((logit - max) / temperature)`` in float64; ``u = uniform() * sum(weights)``; the pick is
  the first candidate whose running sum (in candidate order) exceeds u (the last candidate if rounding leaves none).
  One uniform is drawn per sampled token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MASK = 0xFFFFFFFF


def mix32(seed: int) -> int:
    """The splitmix32 finaliser of ``seed + 0x9E3779B9``, never 0: the generator's first state."""
    z = (int(seed) + 0x9E3779B9) & MASK
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & MASK
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & MASK
    z ^= z >> 16
    return z or 0x6D2B79F5


class Xorshift32:
    """Marsaglia's xorshift32 (13, 17, 5), seeded by ``mix32``."""

    def __init__(self, seed: int) -> None:
        self.state = mix32(seed)

    def next_u32(self) -> int:
        """The next 32-bit state."""
        x = self.state
        x ^= (x << 13) & MASK
        x ^= x >> 17
        x ^= (x << 5) & MASK
        self.state = x
        return x

    def uniform(self) -> float:
        """A float in [0, 1) with 24 random bits."""
        return (self.next_u32() >> 8) / 16777216.0


@dataclass(frozen=True)
class Sampler:
    """How the next token is chosen: temperature 0 is greedy; top_k 0 is the whole vocabulary; ``kind`` names the
    rule that draws (``lm.sampler_kinds``: "xorshift32", this module's, or "litert-lm")."""

    temperature: float = 0.0
    top_k: int = 0
    seed: int = 0
    kind: str = "xorshift32"

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.top_k < 0:
            raise ValueError("temperature and top_k must be >= 0")


def greedy(logits: np.ndarray) -> int:
    """The argmax of ``logits`` [V] (numpy's argmax already returns the lowest id on ties)."""
    return int(np.argmax(logits))


def sample(logits: np.ndarray, sampler: Sampler, rng: Xorshift32 | None) -> int:
    """The next token by ``sampler``'s rule (module docstring); ``rng`` is drawn from once unless greedy."""
    if sampler.temperature == 0 or rng is None:
        return greedy(logits)
    values = np.asarray(logits, np.float64)
    order = np.lexsort((np.arange(values.size), -values))  # by logit descending, then id ascending
    if sampler.top_k:
        order = order[: sampler.top_k]
    weights = np.exp((values[order] - values[order[0]]) / sampler.temperature)
    total = 0.0
    for w in weights:  # a plain running sum in candidate order, as JS adds (Python 3.12's sum() compensates)
        total += float(w)
    u = rng.uniform() * total
    running = 0.0
    for token, w in zip(order, weights):
        running += float(w)
        if running > u:
            return int(token)
    return int(order[-1])
