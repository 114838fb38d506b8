"""check of a language-model .tflite (docs/lm.md): does the KV cache feed back, and does every op run?

One plan for every runtime: the shortest prefill on seeded tokens (empty caches), then ``DECODE_STEPS`` decode calls,
each fed the caches the call before it returned. In LiteRT (the reference) the decode logits must equal a single
longer prefill of the same tokens (the cache carried what a recomputation gives); another runtime (LiteRT.js) must
give the same decode logits as LiteRT.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.check.base import Finding, Status
from edge_tool.lm.contract import DECODE, PREFILL, LmContract, read_lm_contract
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.parsers.tflite_model import signature_keys

DECODE_STEPS = 2
TOLERANCE = 1e-4  # of the logit scale: float rounding between kernels and call orders


@dataclass(frozen=True)
class Plan:
    """The calls: ``prefill`` (signature key) on ``tokens[:t]``, then one decode per remaining token."""

    prefill: str
    t: int
    tokens: tuple[int, ...]

    def to_json(self) -> dict:
        """What the Node probe reads."""
        return {"prefill": self.prefill, "t": self.t, "tokens": list(self.tokens)}


def is_lm(path: Path) -> bool:
    """True for a .tflite whose signatures are named as the LM contract's (read from the flatbuffer: a file the host's
    LiteRT cannot load is still told apart, for the runtime that has to answer for it)."""
    return any(k == DECODE or PREFILL.match(k) for k in signature_keys(Path(path).read_bytes()))


def plan_of(contract: LmContract) -> Plan:
    """The shortest prefill and DECODE_STEPS tokens after it (seeded byte ids)."""
    t = min(contract.prefill_lengths)
    n = min(t + DECODE_STEPS, contract.max_len)
    tokens = np.random.default_rng(0).integers(0, min(256, contract.vocab_size), size=n)
    return Plan(contract.prefill_key(t), t, tuple(int(x) for x in tokens))


def decode_logits(session: LmSession, plan: Plan) -> np.ndarray:
    """[steps, V]: the plan's decode logits, the caches fed back call by call."""
    session.reset()
    session.prefill(plan.tokens[: plan.t], plan.t)
    return np.stack([session.decode(tok) for tok in plan.tokens[plan.t :]])


def litert_check(path: Path) -> tuple[list[Finding], dict]:
    """LiteRT: the fed-back decode logits against one longer prefill of the same tokens (when the model has one)."""
    contract = read_lm_contract(path)
    plan, session = plan_of(contract), LmSession(tflite_call(path), contract)
    got = decode_logits(session, plan)
    details = {"plan": plan.to_json(), "decode_logits": got.tolist()}
    if not np.isfinite(got).all():
        return [Finding("(cache)", Status.UNSUPPORTED, "decode after prefill gives NaN/Inf logits")], details
    longer = [t for t in contract.prefill_lengths if t >= len(plan.tokens)]
    if not longer:
        details["fed_back"] = "finite logits (no longer prefill to compare with)"
        return [], details
    session.reset()
    want = session.prefill(plan.tokens, min(longer))[plan.t :]
    error = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
    details["fed_back"] = f"decode after prefill equals one prefill of the same tokens to {error:.2g} of the scale"
    if error > TOLERANCE:
        return [_broken(f"{error:.3g} of the logit scale from one prefill of the same tokens")], details
    return [], details


def compare(reference: list, got: list, runtime: str) -> list[Finding]:
    """Findings when ``runtime``'s fed-back decode logits differ from LiteRT's (``reference``)."""
    ref, out = np.asarray(reference, np.float64), np.asarray(got, np.float64)
    if out.shape != ref.shape or not np.isfinite(out).all():
        return [_broken(f"{runtime} gave logits of shape {out.shape} (finite: {np.isfinite(out).all()})")]
    error = float(np.abs(out - ref).max() / max(1.0, np.abs(ref).max()))
    return [] if error <= TOLERANCE else [_broken(f"{runtime} differs from LiteRT by {error:.3g} of the logit scale")]


def _broken(what: str) -> Finding:
    return Finding(
        "(cache)",
        Status.UNSUPPORTED,
        f"the KV cache does not feed back: decode logits after prefill are {what}. A cache output that is not the "
        "next call's input, or a write at the wrong position, does this (docs/lm.md).",
    )
