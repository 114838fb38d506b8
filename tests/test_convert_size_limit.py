"""A .tflite over FlatBuffers' 2 GiB is refused before anything converts, naming the limit, the model's declared weight
bytes and the modes that fit (issue 43, item 2).

The model declares 3 GiB without holding it: a SavedModel whose graph Const is a splat (one value for a declared
shape of 805,306,368 float32s), as tests/hostile/test_hostile_declared_sizes.py builds it; the per-tensor limit is
raised above it so the 2 GiB check is the one that answers. fp32 (3 GiB) is refused; fp16 (1.5 GiB) and the int8
modes (0.75 GiB) fit. Nothing is converted, so nothing of the 3 GiB is ever allocated.
"""

from __future__ import annotations

import json

import pytest

from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.size_limit import drop_modes_too_large, modes_that_fit
from edge_tool.parsers.declared_weights import declared_weight_bytes
from tests.builds import SPLAT_SAVED_MODEL, run_script
from tests.edgetool_runs import run_edgetool

DECLARED = 3 << 30
_ENV = {"EDGETOOL_MAX_TENSOR_BYTES": str(4 << 30)}  # above the splat, so the 2 GiB check is the one that answers


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("declares3g") / "sm"
    run_script(SPLAT_SAVED_MODEL, out)
    return out


def test_modes_that_fit_follow_the_weights_share():
    int8s = ("dynamic", "int8", "int16x8", "weight-int8")
    int4s = ("weight-int4", "weight-int4-block32")
    assert modes_that_fit(DECLARED) == ("fp16", *int8s, *int4s)
    assert modes_that_fit(5 << 30) == (*int8s, *int4s)
    assert modes_that_fit(9 << 30) == int4s  # an eighth of 9 GiB
    assert modes_that_fit(17 << 30) == ()


@pytest.mark.slow
def test_fp32_over_2_gib_is_refused_before_converting(big_model, tmp_path, monkeypatch):
    proc = run_edgetool("convert", big_model, "--quant", "fp32", "-o", tmp_path / "out", env=_ENV)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, said[-2000:]
    for words in ("2,147,483,648 bytes (2 GiB)", "declares 3,221,225,4", "--quant fp16,dynamic,int8,int16x8"):
        assert words in said, said
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.iterdir())

    monkeypatch.setenv("EDGETOOL_MAX_TENSOR_BYTES", _ENV["EDGETOOL_MAX_TENSOR_BYTES"])
    assert declared_weight_bytes(big_model) >= DECLARED  # the splat, plus nothing of note
    config = ConvertConfig(model=big_model, output_dir=tmp_path / "o", modes=("fp32", "fp16"), keep_going=True)
    kept, failed = drop_modes_too_large(config)  # with a mode that fits, only the others are refused
    assert [m.value for m in kept.modes] == ["fp16"] and list(failed) == ["fp32"]


def test_h5_declaring_3_6_gb_is_refused_naming_the_modes_that_fit(tmp_path):
    import h5py

    config = {"class_name": "Sequential", "config": {"name": "s", "layers": []}}
    with h5py.File(tmp_path / "big.h5", "w") as f:  # a few KB declaring 3.6 GB: gzip chunks, none written
        f.attrs["model_config"] = json.dumps(config)
        f.attrs["keras_version"] = "2.15.0"
        g = f.create_group("model_weights/dense/dense")
        g.create_dataset("kernel:0", shape=(30000, 30000), dtype="f4", compression="gzip", chunks=(1000, 1000))
    assert declared_weight_bytes(tmp_path / "big.h5") == 3_600_000_000
    proc = run_edgetool("convert", tmp_path / "big.h5", "--quant", "fp32", "-o", tmp_path / "out", env=_ENV)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "declares 3,600,000,000 bytes" in said and "--quant fp16," in said, said[-2000:]
    assert not (tmp_path / "out").exists()
