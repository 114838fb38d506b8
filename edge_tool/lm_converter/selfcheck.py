"""An LM file's self-check: a chunked prefill then 8 decode steps, the caches fed from each call's outputs to the
next call's inputs, in LiteRT against the SavedModel in TensorFlow (both through ``lm.session.LmSession``).

fp32 is judged (max |Δlogit| ≤ 1e-4 × the reference's logit scale); the other modes are measured, failing only on
NaN/Inf or a broken cache (decode positions far worse than prefill positions, where quantization alone errs alike).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.lm.contract import LmContract
from edge_tool.lm.session import LmSession, saved_model_call, tflite_call

DECODE_STEPS = 8
BROKEN_CACHE_RATIO = 10.0  # decode drift this many times the prefill drift (and a tenth of the scale) = broken


@dataclass(frozen=True)
class Probe:
    """The seeded tokens checked and the SavedModel's logits over them; ``prompt`` tokens go through prefill."""

    tokens: np.ndarray  # [n] int32
    prompt: int
    logits: np.ndarray  # [n, V]

    @property
    def scale(self) -> float:
        """The reference's logit scale: max |logit|, at least 1."""
        return max(1.0, float(np.abs(self.logits).max()))


def probe_tokens(contract: LmContract, seed: int = 0) -> tuple[np.ndarray, int]:
    """Seeded byte tokens: a prompt of one full longest prefill plus a padded shorter chunk, then DECODE_STEPS."""
    lengths = contract.prefill_lengths
    prompt = max(lengths) + max(1, min(lengths) // 2 + 1)
    prompt = min(prompt, contract.max_len - DECODE_STEPS)
    high = min(256, contract.vocab_size)
    tokens = np.random.default_rng(seed).integers(0, high, size=prompt + DECODE_STEPS).astype(np.int32)
    return tokens, prompt


def run_chunked(session: LmSession, tokens: np.ndarray, prompt: int) -> np.ndarray:
    """Logits [n, V]: ``session.feed`` of the prompt (prefill chunks), then one decode call per remaining token."""
    session.reset()
    out = [session.feed(tokens[:prompt])]
    out += [session.decode(int(t))[None] for t in tokens[prompt:]]
    return np.concatenate(out, 0)


def reference_probe(saved_model: Path, contract: LmContract, seed: int = 0) -> Probe:
    """The SavedModel's logits over ``probe_tokens`` (computed once per run, shared by every mode)."""
    tokens, prompt = probe_tokens(contract, seed)
    logits = run_chunked(LmSession(saved_model_call(saved_model), contract), tokens, prompt)
    return Probe(tokens, prompt, logits)


@dataclass(frozen=True)
class LmCheck:
    """One file against the probe: drift relative to the logit scale at prefill and decode positions, greedy
    agreement, and the verdict (``ok``; ``problem`` says why not)."""

    prefill_drift: float | None  # max |Δlogit| / scale over prompt positions; None: NaN/Inf
    decode_drift: float | None
    argmax_agreement: float
    tolerance: float | None
    ok: bool
    problem: str | None


def check_file(tflite: Path, contract: LmContract, probe: Probe, tolerance: float | None) -> LmCheck:
    """Run ``probe`` through ``tflite`` in LiteRT and judge it (see the module doc)."""
    got = run_chunked(LmSession(tflite_call(tflite), contract), probe.tokens, probe.prompt)
    ref, p = probe.logits, probe.prompt
    if not np.isfinite(got).all():
        return LmCheck(None, None, 0.0, tolerance, False, "NaN/Inf logits")
    err = np.abs(got - ref).max(axis=-1) / probe.scale
    pre, dec = float(err[:p].max()), float(err[p:].max())
    agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    problem = None
    if tolerance is not None and max(pre, dec) > tolerance:
        problem = f"max |Δlogit| {max(pre, dec):.2g} of the logit scale exceeds {tolerance:g}"
    elif dec > BROKEN_CACHE_RATIO * max(pre, 1e-6) and dec > 0.1:
        problem = f"decode positions drift {dec:.2g} against {pre:.2g} at prefill: the cache is not carried correctly"
    return LmCheck(pre, dec, agree, tolerance, problem is None, problem)
