"""LiteRT-LM's CPU sampler (litert-lm-api 0.18, ``TopKTopPSampling`` in its ``sampling_cpu_util.cc``), re-stated so
that edgetool's runtimes can draw the tokens LiteRT-LM's engine draws from the same logits and seed.

What the shipped binary does (read from upstream source; the generator type from the library's own symbols: it is
built with libc++, whose ``std::default_random_engine`` is ``minstd_rand``, not libstdc++'s ``minstd_rand0``):

- Generator: ``x <- 48271 * x mod (2**31 - 1)``, first state ``seed mod m`` (0 becomes 1); the seed is an int32,
  widened to unsigned 64 bits first. ``uniform_real_distribution<double>(0, c)`` is libc++'s ``generate_canonical``
  with two draws: ``((g1 - 1) + (g2 - 1) * R) / R**2`` with ``R = 2**31 - 2``, times ``c``.
- Candidates (k <= 1024; larger k is refused): the ``k`` ids with the largest logits (k = min(top_k, V)), ordered by logit, highest first, lower id
  first on ties. k == 1 is greedy and draws nothing.
- Probabilities, all float32: ``expf((logit - max) / t)`` with ``t = max(temperature, FLT_EPSILON)``; their sum in
  candidate order; ``p_i * float(1.0 / sum)``. An infinite sum (tiny t) puts probability 1 on the top candidate.
- Top-p: running sum in float64, candidates kept up to the first whose running sum is >= top_p.
- Draw: ``u = c * canonical`` where c is that running sum; the token is the first kept candidate whose running sum
  is >= u. Two generator steps per sampled token.

Not reproduced: the order of equal float32 probabilities (LiteRT-LM re-sorts them with the unstable ``std::sort``)
and which of several equal logits at the k-th place enters the heap; ``tie_risk`` reports when a row has either.
"""

from __future__ import annotations

import numpy as np

MODULUS = 2**31 - 1
MULTIPLIER = 48271
RANGE = float(MODULUS - 1)  # minstd_rand's max - min + 1 = 2**31 - 2
FLT_EPSILON = float(np.finfo(np.float32).eps)
MAX_K = 1024  # above it LiteRT-LM orders candidates by std::nth_element, which is not reproduced here


class MinstdRand:
    """libc++'s ``std::default_random_engine`` (``minstd_rand``) with its ``uniform_real_distribution<double>``."""

    def __init__(self, seed: int) -> None:
        x = (int(seed) % 2**64) % MODULUS
        self.state = x or 1

    def next_u32(self) -> int:
        """The next value in [1, 2**31 - 2]."""
        self.state = (self.state * MULTIPLIER) % MODULUS
        return self.state

    def canonical(self) -> float:
        """libc++'s ``generate_canonical<double, 53>``: two draws, in [0, 1)."""
        low = float(self.next_u32() - 1)
        high = float(self.next_u32() - 1)
        return (low + high * RANGE) / (RANGE * RANGE)

    def uniform(self, upper: float = 1.0) -> float:
        """``uniform_real_distribution<double>(0, upper)``: ``(upper - 0) * canonical + 0``."""
        return upper * self.canonical() + 0.0


def candidates(logits: np.ndarray, k: int) -> np.ndarray:
    """The ids of the k largest logits, highest first (lower id first on ties)."""
    values = np.asarray(logits, np.float32)
    order = np.lexsort((np.arange(values.size), -values.astype(np.float64)))
    return order[: min(k, values.size)]


def probabilities(logits: np.ndarray, ids: np.ndarray, temperature: float) -> np.ndarray:
    """LiteRT-LM's float32 softmax over ``ids`` (``Softmax`` in sampling_cpu_util.cc)."""
    values = np.asarray(logits, np.float32)[ids]
    t = np.float32(max(np.float32(temperature), np.float32(FLT_EPSILON)))
    scaled = (values - values[0]) / t  # float32 subtract and divide
    exps = np.exp(scaled.astype(np.float64)).astype(np.float32)  # expf, correctly rounded
    total = np.float32(0.0)
    for e in exps:  # float32, in candidate order
        total = np.float32(total + e)
    if np.isinf(total):
        out = np.zeros(len(ids), np.float32)
        out[0] = 1.0
        return out
    return (exps * np.float32(1.0 / float(total))).astype(np.float32)


def tie_risk(logits: np.ndarray, k: int, temperature: float) -> bool:
    """True when LiteRT-LM's pick could depend on an order this module does not reproduce (module docstring)."""
    ids = candidates(logits, k + 1)
    values = np.asarray(logits, np.float32)
    edge = len(ids) > k and values[ids[k]] == values[ids[k - 1]]
    probs = probabilities(logits, ids[:k], temperature)
    return bool(edge or np.any(probs[1:] == probs[:-1]))


def sample(logits: np.ndarray, top_k: int, top_p: float, temperature: float, rng: MinstdRand) -> int:
    """The token LiteRT-LM's ``TopKTopPSampling`` picks from one row of ``logits`` [V] (module docstring)."""
    k = min(int(top_k), np.asarray(logits).size)
    if k > MAX_K:
        raise ValueError(f"top_k {k} > {MAX_K}: LiteRT-LM's candidate order there (std::nth_element) is not reproduced")
    ids = candidates(logits, k)
    if k == 1:
        return int(ids[0])
    probs = probabilities(logits, ids, temperature)
    p = float(np.float32(top_p))
    cumulative, kept = 0.0, 0
    for q in probs:
        cumulative += float(q)
        kept += 1
        if cumulative >= p:
            break
    if cumulative <= np.finfo(np.float64).eps:
        return int(ids[0])
    u = rng.uniform(cumulative)
    running = 0.0
    for i in range(kept):
        running += float(probs[i])
        if u <= running:
            return int(ids[i])
    return int(ids[kept - 1])  # not reached: u < cumulative
