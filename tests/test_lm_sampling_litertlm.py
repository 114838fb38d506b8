"""The ``litert-lm`` sampler kind (edge_tool.lm.sampling_litertlm): the generator's known answers, the kind's
validation, and — the proof — LiteRT-LM's own engine drawing, from a bundle, exactly the text edgetool's
``Sampler(kind="litert-lm")`` draws on the same .tflite in the native interpreter."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from importlib.util import find_spec

import numpy as np
import pytest

from edge_tool.errors import UsageError
from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.generate import generate
from edge_tool.lm.sampler_kinds import SAMPLERS
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.sampling_litertlm import MinstdRand, sample, tie_risk
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.lm.spec import SAMPLER_KINDS, LmSpec, SamplerDefaults, parse_spec
from edge_tool.lm.tokenizer.byte import ByteTokenizer
from edge_tool.lm_converter.litertlm import write_bundle
from tests.edgetool_runs import run_edgetool

HAS_LM_EXTRA = all(find_spec(m) for m in ("litert_lm", "litert_lm_builder", "tokenizers"))
PROMPT, TOKENS, SEEDS = "The ", 48, (0, 1, 2, 3, 7, 42)


def test_the_generator_is_libcxx_minstd_rand():
    rng = MinstdRand(1)
    values = [rng.next_u32() for _ in range(10000)]
    assert values[:2] == [48271, 182605794] and values[-1] == 399268537  # [rand.predef]: the 10000th is 399268537
    assert MinstdRand(0).state == 1 and MinstdRand(-1).state == (2**64 - 1) % (2**31 - 1)
    two = MinstdRand(5)
    a, b = two.next_u32(), two.next_u32()
    assert MinstdRand(5).uniform(0.5) == 0.5 * (((a - 1) + (b - 1) * (2**31 - 2)) / float(2**31 - 2) ** 2)


def test_a_draw_follows_the_float32_softmax_and_top_k():
    logits = np.log(np.array([0.1, 0.6, 0.3, 1e-9], np.float32))
    rng = MinstdRand(11)
    picks = np.array([sample(logits, 4, 1.0, 1.0, rng) for _ in range(4000)])
    assert np.allclose(np.bincount(picks, minlength=4) / 4000, [0.1, 0.6, 0.3, 0.0], atol=0.03)
    assert {sample(logits, 2, 1.0, 1.0, rng) for _ in range(300)} == {1, 2}
    state = rng.state
    assert sample(logits, 1, 1.0, 1.0, rng) == 1 and rng.state == state  # k 1: greedy, nothing drawn
    assert not tie_risk(logits, 2, 0.8) and tie_risk(np.array([3.0, 1.0, 1.0], np.float32), 2, 0.8)  # k-th place


def test_the_kind_is_registered_validated_and_not_the_default():
    assert SAMPLERS.names() == SAMPLER_KINDS and Sampler().kind == SamplerDefaults().kind == "xorshift32"
    spec = dict(vocab_size=264, max_len=64, prefill_lengths=(16,), num_layers=1, num_kv_heads=1, head_dim=8)
    assert LmSpec(**spec, sampler=SamplerDefaults(0.8, 40, 3, "litert-lm")).sampler.kind == "litert-lm"
    with pytest.raises(UsageError, match="sampler kind is 'mt19937'"):
        LmSpec(**spec, sampler=SamplerDefaults(kind="mt19937"))
    with pytest.raises(UsageError, match="at most 1024 candidates"):
        LmSpec(**{**spec, "vocab_size": 2048}, sampler=SamplerDefaults(kind="litert-lm"))
    old = json.loads(LmSpec(**spec).to_json())
    del old["sampler"]["kind"]  # a file written before the key still means xorshift32
    assert parse_spec(json.dumps(old), "old").sampler.kind == "xorshift32"


def _engine_text(litert_lm, bundle, max_len: int, config) -> str:
    """LiteRT-LM's continuation of PROMPT (``config`` None: the bundle's own sampler defaults)."""
    with tempfile.TemporaryDirectory() as cache:
        engine = litert_lm.Engine(str(bundle), max_num_tokens=max_len, cache_dir=cache)
        try:
            with engine.create_session(
                apply_prompt_template=False, sampler_config=config, max_output_tokens=TOKENS
            ) as session:
                session.run_prefill([PROMPT])
                return "".join(session.run_decode().texts)
        finally:
            engine.close()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LM_EXTRA, reason="litert-lm-api / litert-lm-builder / tokenizers not installed")
def test_litert_lm_draws_what_the_litert_lm_kind_draws_natively(tiny_lm_bhsd, tmp_path):
    import litert_lm
    import tokenizers

    proc = run_edgetool("convert", tiny_lm_bhsd / "model", "-o", tmp_path / "lm", "--quant", "fp32", "--litertlm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tflite, bundle = tmp_path / "lm" / "model_fp32.tflite", tmp_path / "lm" / "model_fp32.litertlm"
    spec = parse_spec((tmp_path / "lm" / "edgetool_lm.json").read_text(encoding="utf-8"), "edgetool_lm.json")
    session = LmSession(tflite_call(tflite), read_lm_contract(tflite))
    tok = ByteTokenizer(spec)
    hf = tokenizers.Tokenizer.from_str(tok.hf_json())
    prompt = [spec.bos_id, *tok.encode(PROMPT)]

    def ours(sampler: Sampler) -> str:
        ids = generate(session, prompt, TOKENS, sampler, spec.stop_ids)
        assert len(ids) == TOKENS
        # the engine detokenizes with HF tokenizers, specials kept (an untrained model draws <bos> too), and its
        # text crosses a C API as a NUL-terminated string: an untrained model's byte 0 ends it
        return hf.decode(ids, skip_special_tokens=False).split("\x00")[0]

    compared = 0
    for seed in SEEDS:
        config = litert_lm.SamplerConfig(top_k=40, top_p=1.0, temperature=0.8, seed=seed)
        text = ours(Sampler(0.8, 40, seed, "litert-lm"))
        assert _engine_text(litert_lm, bundle, spec.max_len, config) == text, seed
        compared += len(text)
    assert compared >= len(SEEDS) * TOKENS // 2  # most of the text, not only NUL-cut stubs
    # the bundle's own defaults run (LiteRT-LM 0.18 on CPU implements only TOP_P): greedy here, then a litert-lm kind
    assert _engine_text(litert_lm, bundle, spec.max_len, None) == ours(Sampler())
    sampled = dataclasses.replace(spec, sampler=SamplerDefaults(0.8, 40, 5, "litert-lm"))
    write_bundle(tflite, sampled, tok.hf_json(), tmp_path / "sampled.litertlm", tmp_path)
    text = ours(Sampler(0.8, 40, 5, "litert-lm"))
    assert _engine_text(litert_lm, tmp_path / "sampled.litertlm", spec.max_len, None) == text
