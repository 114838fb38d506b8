"""convert --task lm (inferred): every LM mode from one tiny contract LM, in one shared run (--quant auto builds them
all and measures perplexity): fp32 equal to the Keras forward pass, each mode's drift bounded, sizes ordered, the
manifest valid under its schema, what did nothing or stayed float said; and the refusals, each with its reason."""

from __future__ import annotations

import json
from importlib.util import find_spec

import flatbuffers
import numpy as np
import pytest

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.session import LmSession, open_session, tflite_call
from edge_tool.lm.spec import LmSpec
from edge_tool.lm.tokenizer.byte import ByteTokenizer, byte_tokenizer_json
from edge_tool.lm_converter.bundle import greedy_text
from edge_tool.lm_converter.litertlm import engine_greedy
from edge_tool.parsers.tflite_schema import tflite_schema
from tests.builds import built_once
from tests.edgetool_runs import run_edgetool
from tests.schema_check import validated

pytestmark = pytest.mark.slow
# max |Δlogit| / logit scale over the self-check (chunked prefill + 8 decode steps) on the seeded untrained tiny LM;
# measured here: fp32 3e-7, fp16 5e-4, dynamic 1.3e-2, weight-int8 6e-3, weight-int4 0.16
DRIFT = {"fp32": 1e-4, "fp16": 5e-3, "dynamic": 5e-2, "weight-int8": 5e-2, "weight-int4": 0.5}
HELD_OUT = "It was the best of times, it was the worst of times, it was the age of wisdom. " * 8
HAS_LM_EXTRA = all(find_spec(m) for m in ("litert_lm", "litert_lm_builder", "tokenizers"))
NO_LM_EXTRA = "the lm extra (litert-lm-builder, litert-lm-api, tokenizers) is not installed: pip install -e '.[lm]'"


@pytest.fixture(scope="session")
def lm_converted(tiny_lm, tmp_path_factory):
    """(output dir, the run) of ``convert <tiny LM> --quant auto --max-drop 0.05`` (every LM mode)."""

    def build(out):
        text = out / "heldout.txt"
        out.mkdir(parents=True, exist_ok=True)
        text.write_text(HELD_OUT, encoding="utf-8")
        args = (
            "--quant",
            "auto",
            "--max-drop",
            "0.05",
            "--eval-data",
            text,
            *(("--litertlm",) if HAS_LM_EXTRA else ()),
        )
        proc = run_edgetool("convert", tiny_lm / "model", "-o", out / "lm", *args)
        (out / "run.json").write_text(json.dumps({"rc": proc.returncode, "out": proc.stdout + proc.stderr}))

    where = built_once(tmp_path_factory, "lm-converted", build)
    return where / "lm", json.loads((where / "run.json").read_text())


def test_every_lm_mode_converts_with_bounded_drift(lm_converted):
    out, run = lm_converted
    assert run["rc"] == 0, run["out"]
    doc = validated(out / "manifest.json", "manifest")
    assert doc["lm_options"]["task"] == "lm" and doc["options"]["modes"] == doc["lm_options"].get(
        "modes", doc["options"]["modes"]
    )
    entries = {a["quant"]: a for a in doc["artifacts"]}
    assert set(entries) == set(DRIFT)
    for mode, tolerance in DRIFT.items():
        check = entries[mode]["lm"]["self_check"]
        assert check["ok"] and max(check["prefill_drift"], check["decode_drift"]) <= tolerance, (mode, check)
        assert entries[mode]["lm"]["signatures"] == ["prefill_8", "prefill_16", "decode"]
        assert entries[mode]["lm"]["cache_bytes"] == 2 * 2 * 64 * 4 * 8 * 4
    sizes = {m: e["size_bytes"] for m, e in entries.items()}
    assert sizes["weight-int4"] < sizes["weight-int8"] < sizes["fp32"] and sizes["fp16"] < sizes["fp32"]
    for mode in (
        "weight-int8",
        "weight-int4",
    ):  # the token embedding quantized too; the position table left float, said
        lm = entries[mode]["lm"]
        assert lm["quantized_ops"]["EMBEDDING_LOOKUP"] == 3 and lm["float_ops"] == {"GATHER": 3}  # one per signature
        assert any("left in float" in n for n in lm["notes"]) and "EMBEDDING_LOOKUP" in run["out"]
    assert "did nothing" in doc["failed"]["weight-int4-block32"]  # ai-edge-quantizer 0.10 changes nothing: said
    assert doc["lm"]["max_len"] == 64 and (out / "edgetool_lm.json").is_file()


def test_fp32_file_equals_the_keras_forward_pass(lm_converted, tiny_lm):
    out, _ = lm_converted
    ref = np.load(tiny_lm / "reference.npz")
    tflite = out / "model_fp32.tflite"
    got = LmSession(tflite_call(tflite), read_lm_contract(tflite)).feed(ref["tokens"][0])
    assert np.abs(got - ref["logits"][0]).max() <= 1e-4 * np.abs(ref["logits"]).max()


def test_auto_chooses_the_smallest_within_the_perplexity_budget(lm_converted):
    out, run = lm_converted
    doc = json.loads((out / "manifest.json").read_text())
    choice, entries = doc["lm_choice"], {a["quant"]: a["lm"] for a in doc["artifacts"]}
    within = [a for a in doc["artifacts"] if a["quant"] != "fp32" and a["lm"]["perplexity_increase"] <= 0.05]
    assert choice["chosen"] == min(within, key=lambda a: a["size_bytes"])["quant"]
    assert entries["fp32"]["perplexity_increase"] == 0 and choice["baseline_perplexity"] > 1
    assert f"chosen: {choice['chosen']}" in run["out"]


@pytest.mark.skipif(not HAS_LM_EXTRA, reason=NO_LM_EXTRA)
def test_byte_tokenizer_json_gives_edgetools_byte_ids():
    import tokenizers

    spec = LmSpec(vocab_size=264, max_len=64, prefill_lengths=(8,), num_layers=1, num_kv_heads=1, head_dim=8)
    tok = tokenizers.Tokenizer.from_str(byte_tokenizer_json(spec))
    text = "Héllo, wörld ✓\n\t  x\x00\x7f 🙂"
    assert tok.encode(text).ids == list(text.encode("utf-8"))
    assert tok.decode(list(text.encode("utf-8"))) == text
    assert tok.token_to_id("<bos>") == 256 and tok.token_to_id("<eos>") == 257 and tok.token_to_id("<pad>") == 258


@pytest.mark.skipif(not HAS_LM_EXTRA, reason=NO_LM_EXTRA)
def test_litertlm_bundles_generate_in_litert_lm_what_tensorflow_generates(lm_converted, tiny_lm):
    out, _ = lm_converted
    doc = json.loads((out / "manifest.json").read_text())
    for entry in doc["artifacts"]:  # every mode's bundle was checked in the engine by convert itself
        assert entry["lm"]["litertlm"]["greedy_match"] and (out / entry["lm"]["litertlm"]["path"]).is_file()
    contract = read_lm_contract(tiny_lm / "model")
    reference = greedy_text(
        tiny_lm / "model",
        contract,
        contract.spec,
        ByteTokenizer(contract.spec),
        session=open_session(tiny_lm / "model"),
    )
    assert engine_greedy(out / "model_fp32.litertlm", contract.spec) == reference  # the oracle: TensorFlow


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--quant", "int8"), "is not built for a language model"),
        (("--max-len", "32"), "fixed cache shapes"),
        (("--prefill-len", "12"), "prefill signatures for 8, 16 only"),
        (("--max-memory", "0.01"), "does not fit --max-memory"),
        (("--format", "tfjs"), "do not apply to a language model"),
    ],
)
def test_refusals_say_why_and_the_way_out(tiny_lm, tmp_path, args, said):
    proc = run_edgetool("convert", tiny_lm / "model", "-o", tmp_path / "o", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in " ".join((proc.stdout + proc.stderr).split())
    assert not (tmp_path / "o").exists()


def _swap_prefill_cache_outputs(src, dst) -> None:
    """A contract-valid file whose prefill returns K where V belongs (and back): its cache does not feed back."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(src.read_bytes()), 0))
    sig = next(s for s in model.signatureDefs if s.signatureKey.decode() == "prefill_8")
    by_name = {t.name.decode(): t for t in sig.outputs}
    k, v = by_name["kv_cache_k_0"], by_name["kv_cache_v_0"]
    k.tensorIndex, v.tensorIndex = v.tensorIndex, k.tensorIndex
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst.write_bytes(bytes(builder.Output()))


@pytest.mark.parametrize("target", ["litert-cpu", "litertjs"])
def test_check_feeds_the_cache_back_and_finds_one_that_does_not(lm_converted, tmp_path, target):
    out, _ = lm_converted
    good = run_edgetool("check", out / "model_weight-int8.tflite", "--target", target)
    assert good.returncode == 0 and "fed back" in good.stdout, good.stdout + good.stderr
    broken = tmp_path / "broken.tflite"
    _swap_prefill_cache_outputs(out / "model_fp32.tflite", broken)
    bad = run_edgetool("check", broken, "--target", target)
    assert bad.returncode == 1 and "does not feed back" in " ".join(bad.stdout.split()), bad.stdout + bad.stderr


@pytest.mark.skipif(not HAS_LM_EXTRA, reason=NO_LM_EXTRA)
def test_a_model_in_litert_lms_cache_layout_is_bundled_without_a_transpose(tiny_lm_bhsd, tmp_path):
    proc = run_edgetool("convert", tiny_lm_bhsd / "model", "-o", tmp_path / "lm", "--quant", "fp32", "--litertlm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (entry,) = json.loads((tmp_path / "lm" / "manifest.json").read_text())["artifacts"]
    record = entry["lm"]["litertlm"]
    assert record["greedy_match"] and "no transpose" in record["cache_layout"]
    assert record["seeded_sampling"].startswith("not compared") and "seeded sampling: not compared" in proc.stdout
    assert entry["lm"]["cache_shape"] == [1, 2, 64, 8]  # [1, kv_heads, max_len, head_dim]
