"""The LM run eval makes on every runtime (host TensorFlow / LiteRT, and — sent as source — a ``--device`` board):
teacher-forced logits over a text, greedy and seeded continuations of prompts, time to first token and decode
timings. Each function works on an ``LmSession`` (or the board's copy of it) and imports nothing of edgetool at run
time besides ``sampling`` / ``generate`` (which travel with it), so the board runs this very loop.

``perplexity`` here is THE perplexity of edgetool (eval, ``convert --quant auto``): exp of the mean next-token
negative log-likelihood, computed in float64 from logits, over ``windows`` of the text (max_len tokens on empty
caches, ``<bos>`` first when the model has one).
"""

from __future__ import annotations

import time

import numpy as np

from edge_tool.lm.generate import stream
from edge_tool.lm.sampling import Sampler, greedy


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, in float64."""
    x = np.asarray(logits, np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def perplexity(logits: np.ndarray, targets: np.ndarray) -> float:
    """exp(mean -log p(target)) of next-token ``logits`` [n, V] against ``targets`` [n] (the one perplexity)."""
    targets = np.asarray(targets, np.int64).reshape(-1)
    if len(targets) == 0:
        raise ValueError("perplexity needs at least one target token")
    lp = log_softmax(logits)
    return float(np.exp(-lp[np.arange(len(targets)), targets].mean()))


def windows(ids, max_len: int, bos=None) -> list:
    """The scored windows of ``ids``: max_len tokens each, on empty caches, each starting with ``bos`` when the model
    has one (then every id is scored; without, each window's first id only gives context)."""
    ids = [int(t) for t in ids]
    width = max_len - (bos is not None)
    out = []
    for start in range(0, len(ids), width):
        window = ([int(bos)] if bos is not None else []) + ids[start : start + width]
        if len(window) >= 2:
            out.append(window)
    return out


def teacher_forced(session, ids, prefill_len: int, bos=None):
    """(logits [n, V] predicting each window's next tokens, decode mask [n]) over ``windows(ids)``: each window's
    first ``prefill_len`` tokens through prefill (chunked as ``session.feed`` does), the rest one decode call each,
    so prefill and decode positions are both measured."""
    rows, decode = [], []
    for window in windows(ids, session.contract.max_len, bos):
        session.reset()
        p = min(prefill_len, len(window) - 1)
        rows.append(session.feed(window[:p]))
        decode += [False] * p
        for token in window[p:-1]:
            rows.append(session.decode(token)[None])
            decode.append(True)
    if not rows:
        raise ValueError("the text needs at least two tokens")
    return np.concatenate(rows, 0).astype(np.float32), np.asarray(decode, bool)


def targets_of(ids, max_len: int, bos=None) -> np.ndarray:
    """The next-token targets ``teacher_forced`` predicts, in its order."""
    return np.asarray([t for w in windows(ids, max_len, bos) for t in w[1:]], np.int64)


def continuations(session, prompts, n: int, sampler: Sampler, stop_ids=()) -> list:
    """The ``n`` generated ids (fewer at a stop id or max_len) of each prompt."""
    room = session.contract.max_len
    return [list(stream(session, list(p)[: room - 1], n, sampler, stop_ids)) for p in prompts]


def zero_caches(session) -> dict:
    """The session reset to position 0; its zero caches (one set, reused by every timed run)."""
    session.reset()
    return dict(session.caches)


def time_ttft(session, length: int, reps: int, zeros: dict | None = None) -> list:
    """ns of each of ``reps`` prefills of ``length`` tokens from empty caches (``zeros``: the same arrays every run,
    as a plain loop feeds them — calls never write their inputs), the first token chosen (greedy)."""
    tokens = [(7 * i + 3) % 256 for i in range(length)]
    zeros, out = zeros or zero_caches(session), []
    for _ in range(reps):
        session.position = 0
        session.caches = dict(zeros)
        t0 = time.perf_counter_ns()
        greedy(session.prefill(tokens, length)[-1])
        out.append(time.perf_counter_ns() - t0)
    return out


def time_decode(session, start: int, steps: int, zeros: dict | None = None) -> list:
    """ns of each of ``steps`` greedy decode steps (call + argmax, the cache fed back) from position ``start``."""
    session.caches = dict(zeros or zero_caches(session))
    session.position = start
    token, out = 65, []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        token = greedy(session.decode(token))
        out.append(time.perf_counter_ns() - t0)
    return out


def timings(session, warmup: int, reps: int, steps: int) -> dict:
    """TTFT ns per prefill length and decode-step ns at short (after the shortest prefill) and near-full context
    (the last ``steps`` positions), each after ``warmup`` untimed calls; in the order and with the allocations of a
    plain loop (benchmarks/_lm_scripts.py PLAIN): per length warm-up then timed prefills, then decode warm-up,
    short, near-full, every run starting from the same zero caches."""
    c = session.contract
    steps = max(1, min(steps, c.max_len // 2))
    short = min(c.prefill_lengths[0], c.max_len - steps)
    zeros, out = zero_caches(session), {"ttft_ns": {}}
    for length in c.prefill_lengths:
        time_ttft(session, length, warmup, zeros)
        out["ttft_ns"][str(length)] = time_ttft(session, length, reps, zeros)
    time_decode(session, short, warmup, zeros)
    out["decode_short_ns"] = time_decode(session, short, steps, zeros)
    out["decode_full_ns"] = time_decode(session, c.max_len - steps, steps, zeros)
    out["positions"] = [short, c.max_len - steps]
    return out


def lm_run(session, ids, prompts, req: dict) -> dict:
    """Everything eval measures of one runtime: teacher-forced logits over ``ids`` (prefill of ``req['prefill_len']``
    tokens per window, then decode), greedy and seeded (temperature / top_k, seed + prompt index) continuations of
    ``req['new_tokens']`` tokens per prompt, and with ``req['timing']`` the timings (``timings``) — taken first, right
    after the load, so the process (its allocator included) is in the state a plain loop times in."""
    timed = timings(session, int(req["warmup"]), int(req["reps"]), int(req["steps"])) if req.get("timing") else None
    bos = req.get("bos")
    logits, decode = teacher_forced(session, ids, int(req["prefill_len"]), None if bos is None else int(bos))
    n, stops = int(req["new_tokens"]), [int(s) for s in req.get("stop_ids") or ()]
    seeded = []
    for i, prompt in enumerate(prompts):
        sampler = Sampler(float(req["temperature"]), int(req["top_k"]), int(req["seed"]) + i)
        seeded += continuations(session, [prompt], n, sampler, stops)
    out = {
        "logits": logits,
        "decode": decode,
        "greedy": continuations(session, prompts, n, Sampler(), stops),
        "seeded": seeded,
    }
    if timed is not None:
        out["timed"] = timed
    return out
