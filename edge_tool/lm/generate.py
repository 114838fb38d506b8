"""Generate text with a contract LM over any runtime (``session.LmSession``), byte-level tokenizer included.

``generate(session, prompt_ids, n, sampler)`` feeds the prompt (chunked prefill), then decodes one token at a time,
choosing each by the sampler's kind (``sampler_kinds``), until ``n`` tokens, a stop id, or max_len.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from edge_tool.lm.sampler_kinds import sampler_kind
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import LmSession


def encode_bytes(text: str) -> list[int]:
    """Byte-level ids: the UTF-8 bytes of ``text``."""
    return list(text.encode("utf-8"))


def decode_bytes(ids: Sequence[int]) -> str:
    """Text of byte-level ids (special ids >= 256 are dropped; broken UTF-8 shows as U+FFFD)."""
    return bytes(int(i) for i in ids if 0 <= int(i) < 256).decode("utf-8", errors="replace")


def stream(
    session: LmSession, prompt: Sequence[int], max_new_tokens: int, sampler: Sampler, stop_ids: Sequence[int] = ()
) -> Iterator[int]:
    """Yield generated ids one at a time (the session starts from empty caches)."""
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    session.reset()
    logits = session.feed(prompt)[-1]
    kind = sampler_kind(sampler)
    rng = kind.rng(sampler.seed)
    for i in range(max_new_tokens):
        token = kind.pick(logits, sampler, rng)
        yield token
        if token in stop_ids or session.position >= session.contract.max_len or i + 1 == max_new_tokens:
            return
        logits = session.decode(token)


def generate(
    session: LmSession, prompt: Sequence[int], max_new_tokens: int, sampler: Sampler, stop_ids: Sequence[int] = ()
) -> list[int]:
    """The generated ids (without the prompt), ``stream``'s tokens collected."""
    return list(stream(session, prompt, max_new_tokens, sampler, stop_ids))
