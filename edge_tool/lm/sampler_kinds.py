"""The sampler table: how each ``sampler.kind`` of ``edgetool_lm.json`` draws (``SamplerKind`` in ``SAMPLERS``).

- ``xorshift32`` (the default): edgetool's own rule (``lm.sampling``), written the same way in the page's JS.
- ``litert-lm``: LiteRT-LM 0.18's CPU sampler (``lm.sampling_litertlm``) at ``top_p`` 1.0: the tokens its engine
  draws for ``SamplerConfig(top_k, top_p=1.0, temperature, seed)`` (top_k 0: the whole vocabulary).
Top_k 1 is greedy in both (the argmax, the lowest id on ties); so is temperature 0 in ``xorshift32``, while
``litert-lm`` does what LiteRT-LM does there: it samples at float32 epsilon (the argmax unless the top logits are
within ~1e-5 of each other).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edge_tool.core.registry import Registry
from edge_tool.lm import sampling_litertlm
from edge_tool.lm.sampling import Sampler, Xorshift32, greedy, sample


@dataclass(frozen=True)
class SamplerKind:
    """One sampler: ``rng(seed)`` starts its generator; ``pick(logits, sampler, rng)`` chooses one token."""

    name: str
    summary: str
    rng: Callable[[int], object]
    pick: Callable[[np.ndarray, Sampler, object], int]


SAMPLERS: Registry[SamplerKind] = Registry("LM sampler")


def _litert_lm_pick(logits: np.ndarray, sampler: Sampler, rng) -> int:
    k = sampler.top_k or np.asarray(logits).size
    if k == 1:
        return greedy(logits)
    return sampling_litertlm.sample(logits, k, 1.0, sampler.temperature, rng)


SAMPLERS.register(
    SamplerKind(
        "xorshift32", "edgetool's seeded top-k sampler (docs/lm.md); the page's JS draws the same", Xorshift32, sample
    )
)
SAMPLERS.register(
    SamplerKind(
        "litert-lm",
        "LiteRT-LM 0.18's CPU top-k/top-p sampler at top_p 1.0 (minstd_rand, float32 softmax)",
        sampling_litertlm.MinstdRand,
        _litert_lm_pick,
    )
)


def sampler_kind(sampler: Sampler) -> SamplerKind:
    """The registered kind ``sampler`` names (ValueError naming the known ones otherwise)."""
    if sampler.kind not in SAMPLERS:
        raise ValueError(f"sampler kind {sampler.kind!r} is not one of {', '.join(SAMPLERS.names())}")
    return SAMPLERS[sampler.kind]
