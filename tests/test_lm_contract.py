"""The LM contract's reader and validator (edge_tool.lm.contract, edge_tool.lm.spec): what it accepts, and the one
paragraph it refuses a broken model with."""

from __future__ import annotations

import json

import pytest

from edge_tool.calibration.spec import SignatureInfo, TensorSpec
from edge_tool.errors import ModelError, UsageError
from edge_tool.lm.contract import LmContractError, check_signatures, looks_like_lm, read_lm_contract
from edge_tool.lm.spec import LmSpec, parse_spec
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter
from tests.edgetool_runs import run_edgetool

CACHE = (1, 64, 2, 8)


def _sig(key: str, t: int, layers: int = 2, drop: str = "", dtype: dict | None = None, cache=CACHE) -> SignatureInfo:
    dtype = dtype or {}
    caches = [f"kv_cache_{k}_{i}" for i in range(layers) for k in "kv"]
    ins = [TensorSpec("tokens", dtype.get("tokens", "int32"), (1, t)), TensorSpec("input_pos", "int32", (t,))]
    ins += [TensorSpec(n, dtype.get(n, "float32"), cache) for n in caches if n != drop]
    outs = [TensorSpec("logits", "float32", (1, t, 264))] + [TensorSpec(n, "float32", cache) for n in caches]
    return SignatureInfo(key, tuple(ins), tuple(outs))


def _spec(**kw) -> LmSpec:
    base = {"vocab_size": 264, "max_len": 64, "prefill_lengths": (8, 16), "num_layers": 2}
    return LmSpec(**{**base, "num_kv_heads": 2, "head_dim": 8, **kw})


GOOD = (_sig("decode", 1), _sig("prefill_16", 16), _sig("prefill_8", 8))


def test_a_good_contract_reads_back_its_facts():
    c = check_signatures(GOOD, _spec(), "m")
    assert (c.num_layers, c.num_kv_heads, c.head_dim, c.max_len, c.vocab_size) == (2, 2, 8, 64, 264)
    assert c.prefill_lengths == (8, 16) and c.prefill_key(16) == "prefill_16"
    assert c.cache_bytes == 2 * 2 * 64 * 2 * 8 * 4
    assert looks_like_lm(GOOD) and not looks_like_lm((SignatureInfo("serving_default", (), ()),))


@pytest.mark.parametrize(
    ("signatures", "said"),
    [
        ((_sig("prefill_8", 8),), "there is no `decode` signature"),
        ((_sig("decode", 1),), "there is no `prefill` or `prefill_<T>` signature"),
        (
            (_sig("decode", 1, drop="kv_cache_v_1"), _sig("prefill_8", 8)),
            "`decode` outputs `kv_cache_v_1` but does not take it as an input",
        ),
        (
            (_sig("decode", 1, dtype={"tokens": "int64"}), _sig("prefill_8", 8)),
            "`decode` input `tokens` is int64 [1, 1], expected int32 [1, T]",
        ),
        (
            (_sig("decode", 1, dtype={"kv_cache_k_0": "float16"}), _sig("prefill_8", 8)),
            "`decode` `kv_cache_k_0` is float16",
        ),
        ((_sig("decode", 1), _sig("prefill_8", 8, layers=3)), "the signatures disagree on the number of layers"),
        ((_sig("decode", 1), _sig("prefill_16", 8)), "`prefill_16` takes 8 tokens, but its name says 16"),
    ],
)
def test_a_broken_contract_is_refused_with_one_paragraph(signatures, said):
    with pytest.raises(LmContractError) as err:
        check_signatures(signatures, None, "model.tflite")
    message = str(err.value)
    assert said in message and "\n" not in message
    assert message.startswith("model.tflite does not follow edgetool's LM contract")
    assert "edge_tool.lm.export" in message  # the way out
    assert isinstance(err.value, ModelError)  # exit 2 at the CLI


def test_every_problem_is_listed_at_once():
    with pytest.raises(LmContractError) as err:
        check_signatures((_sig("prefill_8", 8, drop="kv_cache_k_0"),), None, "m")
    assert "no `decode`" in str(err.value) and "`kv_cache_k_0` but does not take it" in str(err.value)


def test_a_spec_that_disagrees_with_the_signatures_is_refused():
    with pytest.raises(LmContractError, match="edgetool_lm.json says max_len 128 but the signatures say 64"):
        check_signatures(GOOD, _spec(max_len=128), "m")


def test_the_cache_layout_is_the_specs_and_a_wrong_one_is_refused_with_the_fix():
    heads_first = tuple(_sig(k, t, cache=(1, 2, 64, 8)) for k, t in (("decode", 1), ("prefill_8", 8)))
    c = check_signatures(heads_first, _spec(prefill_lengths=(8,), cache_layout="bhsd"), "m")
    assert (c.cache_layout, c.max_len, c.num_kv_heads, c.cache_shape()) == ("bhsd", 64, 2, (1, 2, 64, 8))
    alone = check_signatures(heads_first, None, "m")
    assert alone.cache_layout == "bhsd"  # a .tflite alone: max_len the longer axis
    assert alone.described().cache_shape() == (1, 2, 64, 8)  # the defaults the page and convert write keep it
    with pytest.raises(LmContractError, match='say "cache_layout": "bhsd" in edgetool_lm.json'):
        check_signatures(heads_first, _spec(prefill_lengths=(8,)), "m")
    with pytest.raises(UsageError, match="cache_layout is .hbsd.; expected one of bshd, bhsd"):
        _spec(cache_layout="hbsd")


def test_the_spec_round_trips_and_bad_json_names_the_file():
    spec = _spec(stop_ids=(257, 10))
    assert parse_spec(spec.to_json(), "x") == spec
    with pytest.raises(ModelError, match=r"a/edgetool_lm.json is not a readable edgetool_lm.json: .*num_layers"):
        parse_spec(spec.to_json().replace('"num_layers": 2', '"num_layers": 0'), "a/edgetool_lm.json")
    with pytest.raises(ModelError, match="not a readable"):
        parse_spec("[1, 2]", "b")


@pytest.mark.slow
def test_an_exported_saved_model_reads_as_its_spec(tiny_lm):
    c = read_lm_contract(tiny_lm / "model")
    assert (c.num_layers, c.num_kv_heads, c.head_dim, c.max_len, c.prefill_lengths) == (2, 4, 8, 64, (8, 16))
    assert c.spec is not None and c.spec.vocab_size == c.vocab_size == 264


@pytest.mark.slow
def test_inspect_shows_the_lm_and_refuses_a_broken_one_with_exit_2(tiny_lm, tmp_path):
    proc = run_edgetool("inspect", tiny_lm / "model")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "language model (edgetool LM contract" in proc.stdout and "8 (prefill_8), 16 (prefill_16)" in proc.stdout
    proc = run_edgetool("inspect", "--json", tiny_lm / "model")
    lm = json.loads(proc.stdout)["lm"]
    assert (lm["num_layers"], lm["num_kv_heads"], lm["head_dim"], lm["cache_bytes"]) == (
        2,
        4,
        8,
        2 * 2 * 64 * 4 * 8 * 4,
    )
    decode_only = tmp_path / "decode.tflite"
    converter = new_converter(tiny_lm / "model", signature="decode")
    decode_only.write_bytes(run_converter(converter, Refusal(model=decode_only, failed="conversion failed")))
    proc = run_edgetool("inspect", decode_only)
    assert proc.returncode == 2
    assert "does not follow edgetool's LM contract" in proc.stderr and "no `prefill`" in proc.stderr
