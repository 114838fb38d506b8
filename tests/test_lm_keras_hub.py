"""Keras-Hub CausalLMs as language models (edge_tool/lm/keras_hub.py): a tiny GPT2 (learned positions, LayerNorm,
tied embeddings) and a tiny Llama (rotary positions, RMSNorm, SwiGLU, grouped key/value heads), built from config with
random weights and saved with ``.save()``. ``edgetool convert model.keras`` infers --task lm, and its fp32 file's
chunked prefill + decode equals the Keras-Hub model's own forward pass; a vocabulary edgetool cannot tokenize is
refused with the way out; inspect's LM section comes from the model."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest

from edge_tool.errors import UsageError
from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.keras_hub import hub_contract, hub_decoder, hub_logits, load_hub
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.lm_converter.selfcheck import probe_tokens, run_chunked
from tests.builds import built_once
from tests.edgetool_runs import run_edgetool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_spec("keras_hub") is None,
        reason="keras_hub is not installed: the keras-hub extra resolves on TF 2.19 and 2.20 only (pyproject.toml)",
    ),
]
TINY = {"num_layers": 2, "hidden_dim": 32, "intermediate_dim": 64}


def _save(out, family: str, vocab: int = 264):
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    models = keras_hub.models
    if family == "gpt2":
        backbone = models.GPT2Backbone(vocabulary_size=vocab, num_heads=2, max_sequence_length=48, **TINY)
        model = models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    else:
        backbone = models.LlamaBackbone(vocabulary_size=vocab, num_query_heads=4, num_key_value_heads=2, **TINY)
        model = models.LlamaCausalLM(backbone=backbone, preprocessor=None)
    for w in backbone.weights:  # logits of a few units, so 1e-4 of their scale means something
        w.assign(np.random.default_rng(len(w.path)).normal(0, 0.3, w.shape).astype("float32"))
    model.save(out / f"{family}.keras")


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def hub_converted(request, tmp_path_factory):
    """(the .keras file, the output dir, the run) of ``convert FAMILY.keras --quant fp32,weight-int8``."""
    family = request.param

    def build(out):
        _save(out, family)
        args = ("--quant", "fp32,weight-int8", "--max-len", "48", "--prefill-len", "8,16")
        proc = run_edgetool("convert", out / f"{family}.keras", "-o", out / "lm", *args)
        (out / "run.json").write_text(json.dumps({"rc": proc.returncode, "out": proc.stdout + proc.stderr}))

    where = built_once(tmp_path_factory, f"hub-{family}", build)
    return where / f"{family}.keras", where / "lm", json.loads((where / "run.json").read_text())


def test_convert_infers_lm_and_fp32_equals_keras_hub_forward_pass(hub_converted):
    keras_file, out, run = hub_converted
    assert run["rc"] == 0, run["out"]
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["source"]["kind"] == "keras-file" and doc["source"]["flavor"] == "keras-hub"
    assert {a["quant"] for a in doc["artifacts"]} == {"fp32", "weight-int8"}
    assert all(a["lm"]["self_check"]["ok"] for a in doc["artifacts"])
    stem = keras_file.stem
    assert read_lm_contract(out / stem).max_len == 48  # the exported SavedModel: eval's --reference
    fp32 = out / f"{stem}_fp32.tflite"
    contract = read_lm_contract(fp32)
    tokens, prompt = probe_tokens(contract, seed=3)  # not the self-check's own seed
    ours = run_chunked(LmSession(tflite_call(fp32), contract), tokens, prompt)
    theirs = hub_logits(load_hub(keras_file), tokens)
    scale = np.abs(theirs).max()
    assert scale > 1.0
    assert np.abs(ours - theirs).max() <= 1e-4 * scale


def test_a_vocabulary_edgetool_cannot_tokenize_is_refused(tmp_path):
    _save(tmp_path, "gpt2", vocab=300)
    proc = run_edgetool("convert", tmp_path / "gpt2.keras", "-o", tmp_path / "lm")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join((proc.stdout + proc.stderr).split())
    assert "300 ids" in message and "vocabulary_size=264" in message
    assert not (tmp_path / "lm").exists()


def test_inspect_section_of_a_keras_hub_file(tmp_path):
    _save(tmp_path, "llama")
    c = hub_contract(tmp_path / "llama.keras")
    assert (c.num_layers, c.num_kv_heads, c.head_dim, c.vocab_size) == (2, 2, 8, 264)
    assert c.prefill_lengths == (16, 64) and c.cache_bytes == 2 * 2 * c.max_len * 2 * 8 * 4
    assert c.spec.tokenizer == "byte"


def test_a_model_computing_in_bfloat16_is_refused_with_the_way_out():
    import keras_hub

    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=264, num_heads=2, max_sequence_length=16, dtype="bfloat16", **TINY
    )
    with pytest.raises(UsageError, match="computes in bfloat16.*dtype='float32'"):
        hub_decoder(backbone)
