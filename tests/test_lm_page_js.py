"""The LM page's pure modules (web_demo/lm/) in Node against their Python counterparts in edge_tool.lm: the byte
tokenizer gives encode_bytes' ids, xorshift32 and the sampler draw the same numbers and pick the same tokens as
edge_tool.lm.sampling (and its documented known answers), and planChunk calls the signatures LmSession.feed calls."""

from __future__ import annotations

import json
import subprocess

import numpy as np

from edge_tool.lm.contract import LmContract
from edge_tool.lm.generate import decode_bytes, encode_bytes
from edge_tool.lm.sampler_kinds import SAMPLERS
from edge_tool.lm.sampling import Sampler, Xorshift32, mix32, sample
from edge_tool.lm.session import LmSession
from tests.edgetool_runs import REPO, edgetool_in_process
from tests.test_page_js import _node

LM = REPO / "web_demo" / "lm"
TEXTS = ("", "Hello there", "naïve café – 東京 🚀", "a\nb\tc\u0000")
SEEDS = (0, 1, 7, 42, 2**32 - 1, 2**32 + 5, 123456789, -7)
# docs/lm.md's known answers: seed -> first state, then the next three states
KNOWN = {0: (0x92CA2F0E, 844830715, 1143974537, 2661586166), 42: (0x3805EA2C, 759511308, 3338370046, 2568554684)}
DRIVER = """
import fs from 'node:fs';
import { mix32, xorshift32, sample } from '%(lm)s/sampler.js';
import { encode, byteDecoder } from '%(lm)s/tokenizer.js';
import { planChunk } from '%(lm)s/generate.js';
import { minstdRand, sampleLitertLm } from '%(lm)s/sampler_litertlm.js';
const q = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const streams = q.seeds.map((s) => { const r = xorshift32(s); return Array.from({ length: 5 }, () => r.uniform()); });
const states = q.seeds.map((s) => { const r = xorshift32(s); return [mix32(s), r.next(), r.next(), r.next()]; });
const picks = q.samples.map(({ logits, temperature, topK, seed }) => {
  const r = xorshift32(seed);
  return Array.from({ length: 4 }, () => sample(Float32Array.from(logits), { temperature, topK }, r));
});
const texts = q.texts.map((t) => { const d = byteDecoder(); const ids = [...encode(t), 256, 257];
  return { ids, back: ids.map((i) => d.push(i)).join('') + d.flush() }; });
const plans = q.plans.map(({ n, pos, prefill, maxLen }) => {
  const calls = [];
  while (n > 0) { const p = planChunk(n, pos, prefill, maxLen); calls.push(p.name); n -= p.count; pos += p.count; }
  return calls;
});
const minstd = q.seeds.map((s) => { const r = minstdRand(s); return [r.next(), r.next(), r.uniform(0.75)]; });
const litert = q.samples.map(({ logits, temperature, topK, seed }) => {
  const r = minstdRand(seed);
  return Array.from({ length: 4 }, () => sampleLitertLm(Float32Array.from(logits), { temperature, topK }, r));
});
fs.writeFileSync(process.argv[3], JSON.stringify({ streams, states, picks, texts, plans, minstd, litert }));
"""


def _samples(rng) -> list[dict]:
    out = []
    for temperature, top_k in ((0.0, 0), (0.7, 0), (1.0, 5), (2.5, 40), (0.3, 1)):
        for seed in SEEDS[:4]:
            logits = rng.normal(0, 2, 264).astype(np.float32)
            logits[rng.integers(0, 264, 3)] = logits.max()  # ties at the top
            out.append({"logits": logits.tolist(), "temperature": temperature, "topK": top_k, "seed": seed})
    return out


def _feed_calls(n: int, pos: int, lengths: tuple[int, ...], max_len: int) -> list[str]:
    """The signatures LmSession.feed calls for n tokens at position pos (a call that records instead of running)."""
    contract = LmContract(2, 1, 1, max_len, lengths, tuple(f"prefill_{t}" for t in lengths), 264, "float32", 0)
    calls = []

    def call(key, feeds):
        calls.append(key)
        t = feeds["tokens"].shape[1]
        return {"logits": np.zeros((1, t, 264), np.float32), **{k: v for k, v in feeds.items() if "cache" in k}}

    session = LmSession(call, contract)
    session.position = pos
    session.feed([1] * n)
    return calls


def test_tokenizer_prng_sampler_and_chunking_equal_python(tmp_path):
    rng = np.random.default_rng(0)
    plans = [
        (n, pos, lengths, 64)
        for n in (1, 5, 8, 9, 16, 17, 40, 63)
        for pos in (0, 20, 50)
        for lengths in ((8, 16), (16,), (4, 32))
    ]
    plans = [p for p in plans if p[0] + p[1] <= 64]
    query = {
        "seeds": list(SEEDS),
        "samples": _samples(rng),
        "texts": list(TEXTS),
        "plans": [
            {"n": n, "pos": pos, "prefill": [{"name": f"prefill_{t}", "length": t} for t in lengths], "maxLen": m}
            for n, pos, lengths, m in plans
        ],
    }
    (tmp_path / "q.json").write_text(json.dumps(query))
    (tmp_path / "driver.mjs").write_text(DRIVER % {"lm": LM.as_uri()})
    proc = subprocess.run(
        [_node(), str(tmp_path / "driver.mjs"), str(tmp_path / "q.json"), str(tmp_path / "a.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((tmp_path / "a.json").read_text())
    for seed, stream, states in zip(SEEDS, got["streams"], got["states"]):
        r = Xorshift32(seed)
        assert stream == [r.uniform() for _ in range(5)], seed
        r = Xorshift32(seed)
        assert states == [mix32(seed), r.next_u32(), r.next_u32(), r.next_u32()], seed
        assert seed not in KNOWN or tuple(states) == KNOWN[seed]
    for case, picks in zip(query["samples"], got["picks"]):
        r = Xorshift32(case["seed"])
        logits = np.asarray(case["logits"], np.float32)
        sampler = Sampler(case["temperature"], case["topK"], case["seed"])
        assert picks == [sample(logits, sampler, r) for _ in range(4)], case["temperature"]
    _litert_lm_kind_equals_python(query, got)
    for text, js in zip(TEXTS, got["texts"]):
        assert js["ids"] == [*encode_bytes(text), 256, 257] and js["back"] == decode_bytes(js["ids"]) == text
    for (n, pos, lengths, m), calls in zip(plans, got["plans"]):
        assert calls == _feed_calls(n, pos, lengths, m), (n, pos, lengths)


def _litert_lm_kind_equals_python(query: dict, got: dict) -> None:
    """lm/sampler_litertlm.js against edge_tool.lm.sampling_litertlm: the generator's numbers and the picks."""
    kind = SAMPLERS["litert-lm"]
    for seed, js in zip(SEEDS, got["minstd"]):
        r = kind.rng(seed)
        assert js == [r.next_u32(), r.next_u32(), r.uniform(0.75)], seed
    for case, picks in zip(query["samples"], got["litert"]):
        r = kind.rng(case["seed"])
        logits = np.asarray(case["logits"], np.float32)
        sampler = Sampler(case["temperature"], case["topK"], case["seed"], "litert-lm")
        assert picks == [kind.pick(logits, sampler, r) for _ in range(4)], (case["temperature"], case["topK"])


def test_demo_lm_refuses_what_the_page_cannot_run(tmp_path):
    """A non-.tflite model and a file that is not a TFLite flatbuffer: exit 2, one paragraph, nothing written."""
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    proc = edgetool_in_process("demo", folder, "--task", "lm", "-o", tmp_path / "site")
    assert proc.returncode == 2 and "is not a .tflite file" in proc.stdout + proc.stderr
    junk = tmp_path / "lm.tflite"
    junk.write_bytes(b"not a flatbuffer")
    proc = edgetool_in_process("demo", junk, "--task", "lm", "-o", tmp_path / "site")
    assert proc.returncode == 2 and "not a loadable TFLite model" in proc.stdout + proc.stderr
    assert not (tmp_path / "site").exists()
