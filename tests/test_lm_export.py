"""edge_tool.lm.export's prefill/decode endpoints equal the Keras model's full forward pass: in TensorFlow (the
SavedModel) and in LiteRT after conversion through edgetool's converter path, the caches fed back call by call."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.generate import generate
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import LmSession, open_session, saved_model_call, tflite_call
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter

pytestmark = pytest.mark.slow
CHUNKED = 16 + 12 + 8  # two prefill chunks (the second padded from 12 to 16), then 8 decode steps


def _chunked(session: LmSession, tokens: np.ndarray) -> np.ndarray:
    out = [session.prefill(tokens[:16]), session.prefill(tokens[16:28], length=16)]
    out += [session.decode(t)[None] for t in tokens[28:CHUNKED]]
    return np.concatenate(out, 0)


def _reference(built):
    ref = np.load(built / "reference.npz")
    return ref["tokens"][0], ref["logits"][0]


def _convert(model, out) -> None:
    keys = ("decode", "prefill_16", "prefill_8")
    converter = new_converter(model, signatures=keys)
    out.write_bytes(run_converter(converter, Refusal(model=model, failed=f"The TFLite converter failed on {model}")))


@pytest.mark.parametrize("built", ["tiny_lm", "tiny_lm_rope", "tiny_lm_bhsd"])
def test_saved_model_chunked_prefill_and_decode_equal_keras(built, request):
    built = request.getfixturevalue(built)
    tokens, logits = _reference(built)
    session = LmSession(saved_model_call(built / "model"), read_lm_contract(built / "model"))
    got = _chunked(session, tokens)
    scale = np.abs(logits).max()
    assert np.abs(got - logits[:CHUNKED]).max() <= 1e-5 * scale
    session.reset()
    assert np.abs(session.feed(tokens) - logits).max() <= 1e-5 * scale  # 16 + 16 + 16: the feeding policy


@pytest.mark.parametrize("built", ["tiny_lm", "tiny_lm_rope", "tiny_lm_bhsd"])
def test_tflite_chunked_prefill_and_decode_equal_keras(built, request, tmp_path):
    built = request.getfixturevalue(built)
    tflite = tmp_path / "lm.tflite"
    _convert(built / "model", tflite)
    summary = summarize_tflite(tflite.read_bytes())
    assert "DYNAMIC_UPDATE_SLICE" in summary.ops and not summary.flex_ops  # the O(1) cache write, builtins only
    contract = read_lm_contract(tflite)
    assert contract.prefill_keys == ("prefill_8", "prefill_16") and contract.num_layers == 2
    tokens, logits = _reference(built)
    got = _chunked(LmSession(tflite_call(tflite), contract), tokens)
    assert np.abs(got - logits[:CHUNKED]).max() <= 1e-4 * np.abs(logits).max()


def test_generation_agrees_token_for_token_in_tensorflow_and_litert(tiny_lm, tmp_path):
    """Greedy and seeded-sampled continuations (the documented PRNG) are the same through both runtimes."""
    tflite = tmp_path / "lm.tflite"
    _convert(tiny_lm / "model", tflite)
    prompt = list(b"In the beginning God created")  # 28 tokens: prefill_16 + prefill_16 padded
    sessions = [open_session(tiny_lm / "model"), open_session(tflite)]
    for sampler in (Sampler(), Sampler(temperature=0.8, top_k=20, seed=3)):
        runs = [generate(s, prompt, 30, sampler) for s in sessions]
        assert runs[0] == runs[1] and len(runs[0]) == 30
