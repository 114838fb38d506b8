"""edge_tool.tflite_quantizer on a multi-signature float .tflite with an embedding (GATHER), the shape of a language
model's file: every recipe checked against the flatbuffer and against plain LiteRT running both files."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tool.errors import ConversionError, DataError, UsageError
from edge_tool.tflite_quantizer.recipes import RECIPES, Recipe
from edge_tool.tflite_quantizer.run import quantize_tflite
from tests.builds import run_script
from tests.tflite_sources import LM_SCRIPT


@pytest.fixture(scope="module")
def lm_tflite(tmp_path_factory):
    path = tmp_path_factory.mktemp("lm") / "lm.tflite"
    run_script(LM_SCRIPT, path)
    return path


def _samples(n=4):
    rng = np.random.default_rng(0)
    return {
        "prefill": [{"ids": rng.integers(0, 128, (1, 4)).astype(np.int32)} for _ in range(n)],
        "decode": [{"x": rng.normal(size=(1, 64)).astype(np.float32)} for _ in range(n)],
    }


def _run(data: bytes, key: str, sample: dict) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_content=data).get_signature_runner(key)
    return runner(**sample)["logits"].astype(np.float64)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", [Recipe.DYNAMIC_INT8, Recipe.WEIGHT_INT8, Recipe.WEIGHT_INT4])
def test_weight_recipes_quantize_the_matmuls_and_name_the_float_embedding(lm_tflite, recipe):
    float_data = lm_tflite.read_bytes()
    result = quantize_tflite(lm_tflite, recipe)
    assert result.changed and result.require_changed() is result
    assert result.signatures == ("decode", "prefill")
    assert result.quantized_ops == {"FULLY_CONNECTED": 4}  # two per signature
    assert result.float_ops == {"GATHER": 1}  # 0.10 leaves the embedding table in float
    assert "GATHER" in result.float_note()
    assert result.note().float_ops == {"GATHER": 1}
    assert result.size < 0.75 * len(float_data)
    bits = RECIPES[recipe].weight_bits
    for key, samples in _samples().items():  # every signature runs and stays near the float file
        for sample in samples:
            ref, got = _run(float_data, key, sample), _run(result.data, key, sample)
            scale = max(1.0, float(np.abs(ref).max()))
            assert float(np.abs(got - ref).max()) / scale < (0.05 if bits == 8 else 0.3), key


@pytest.mark.slow
def test_a_recipe_that_changes_nothing_is_reported_unchanged(lm_tflite):
    result = quantize_tflite(lm_tflite.read_bytes(), Recipe.WEIGHT_INT4_BLOCK32)  # 0.10 returns the float model
    assert not result.changed and not result.quantized_ops
    assert "unchanged" in result.unchanged_reason()
    with pytest.raises(ConversionError, match="nothing was quantized"):
        result.require_changed()


@pytest.mark.slow
def test_full_int8_needs_calibration_for_every_signature(lm_tflite):
    with pytest.raises(UsageError, match="calibration"):
        quantize_tflite(lm_tflite, Recipe.FULL_INT8)
    with pytest.raises(DataError, match="prefill"):
        quantize_tflite(lm_tflite, Recipe.FULL_INT8, {"decode": _samples()["decode"]})
    result = quantize_tflite(lm_tflite, Recipe.FULL_INT8, _samples())
    assert result.changed and result.float_ops == {}
    assert result.quantized_ops == {"FULLY_CONNECTED": 4, "GATHER": 1}
    with pytest.raises(UsageError, match="already quantized"):
        quantize_tflite(result.data, Recipe.DYNAMIC_INT8)


def test_recipe_table_and_bad_input():
    assert {r.value for r in Recipe} == set(RECIPES.names())
    assert [r.name.value for r in RECIPES.values() if r.needs_calibration] == ["full-int8", "int16x8"]
    with pytest.raises(UsageError, match="Unknown recipe"):
        quantize_tflite(b"", "int3")
    with pytest.raises(Exception, match="TFL3"):
        quantize_tflite(b"\0" * 64, Recipe.DYNAMIC_INT8)
