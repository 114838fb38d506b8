"""``convert model.tflite`` (a float .tflite as the source, quantized by ai-edge-quantizer), ``eval --reference
model.tflite`` and ``check`` on it: a model hub's classifier with metadata and labels, and a multi-signature file
with an embedding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_tool.metadata.reader import read_metadata
from tests.builds import built_once, run_script
from tests.edgetool_runs import edgetool_in_process
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated
from tests.tflite_sources import HUB_SCRIPT, LM_SCRIPT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    return built_once(tmp_path_factory, "hub-tflite", lambda where: run_script(HUB_SCRIPT, where))


@pytest.fixture(scope="module")
def converted(hub, tmp_path_factory):
    out = tmp_path_factory.mktemp("hub") / "out"
    modes = "dynamic,weight-int8,weight-int4,weight-int4-block32,int8"
    proc = edgetool_in_process(
        "convert", hub / "model.tflite", "--quant", modes, "--calibration", hub / "data.npz", "-o", out
    )
    return out, proc


def test_every_mode_is_built_from_the_float_file_with_its_metadata(hub, converted):
    out, proc = converted
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one mode not built: exit 1, the rest written
    manifest = validated(out / "manifest.json", "manifest")
    assert manifest["source"]["kind"] == "tflite-file"
    built = {a["quant"]: a for a in manifest["artifacts"]}
    assert set(built) == {"dynamic", "weight-int8", "weight-int4", "int8"}
    # 0.10's weight-only block-wise int4 returns the model unchanged: refused, never written, said why
    assert "unchanged" in manifest["failed"]["weight-int4-block32"]
    assert not (out / "model_weight-int4-block32.tflite").exists()
    source_size = (hub / "model.tflite").stat().st_size
    assert all("edgetool eval measures it" in e["self_check_skipped"] for e in built.values())  # quantized: said
    for mode, entry in built.items():
        data = (out / entry["path"]).read_bytes()
        assert len(data) < 0.6 * source_size, mode
        assert entry["quantizer"]["changed"] and entry["quantizer"]["quantized_ops"] == {
            "CONV_2D": 2,
            "FULLY_CONNECTED": 2,
        }
        meta = read_metadata(data)  # metadata and its labels.txt carried over from the hub file
        assert meta.labels == ("red", "green", "blue", "top"), mode
        assert entry["metadata"]["normalization"] == {"mean": [0.0], "std": [255.0]}
    assert "int8" in built["int8"]["tensors"]["activation_dtypes"]
    x = np.load(hub / "data.npz")["x"]
    ref = litert_outputs(hub / "model.tflite", x)
    for mode, limit in (("weight-int8", 0.02), ("dynamic", 0.05), ("int8", 0.1), ("weight-int4", 0.2)):
        got = litert_outputs(out / built[mode]["path"], x)
        assert float(np.abs(got - ref).max()) < limit, mode


def test_eval_measures_drift_against_the_float_tflite(hub, converted, tmp_path):
    out, _ = converted
    report = tmp_path / "eval.json"
    proc = edgetool_in_process(
        "eval",
        out / "model_weight-int8.tflite",
        out / "model_int8.tflite",
        "--reference",
        hub / "model.tflite",
        "--data",
        hub / "data.npz",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    assert doc["reference"]["saved_model"].endswith("model.tflite")
    assert doc["reference"]["accuracy"] > 0.5  # the classifier learnt something: drift is measured on a real task
    rows = {r["quant"]: r for r in doc["results"]}
    assert rows["weight-int8"]["top1_agreement"] >= 0.96
    assert rows["int8"]["top1_agreement"] >= 0.9


def test_check_and_refusals(hub, tmp_path):
    proc = edgetool_in_process("check", hub / "model.tflite", "--target", "litert-cpu,tflm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for extra, said in (
        (("--quant", "fp32"), "is the file itself"),
        (("--quant", "fp16"), "a float .tflite source takes dynamic"),
        (("--format", "tfjs"), "--format tflite"),
        (("--quant", "int8"), "needs representative data"),
    ):
        proc = edgetool_in_process("convert", hub / "model.tflite", *extra, "-o", tmp_path / "x")
        assert proc.returncode == 2 and said in proc.stdout + proc.stderr, (extra, proc.stdout + proc.stderr)
        assert not (tmp_path / "x").exists()


def test_auto_and_demo_take_the_float_tflite(hub, tmp_path):
    data = hub / "data.npz"
    args = ("--quant", "auto", "--max-drop", "0.05", "--eval-data", data, "--calibration", data)
    proc = edgetool_in_process("convert", hub / "model.tflite", *args, "-o", tmp_path / "auto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = validated(tmp_path / "auto" / "decision.json", "decision")
    assert {c["name"] for c in decision["candidates"]} == {"dynamic", "int8", "int16x8"}
    chosen = next(c for c in decision["candidates"] if c["chosen"])
    assert (tmp_path / "auto" / chosen["file"]).is_file()
    proc = edgetool_in_process("demo", hub / "model.tflite", "-o", tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = json.loads((tmp_path / "site" / "demo-config.json").read_text())
    assert page["litert"]["input"]["shape"] == [1, 16, 16, 3]  # the free batch fixed to 1 for LiteRT.js
    assert "4 from" in proc.stdout + proc.stderr  # the labels the hub file carries


def test_a_multi_signature_file_names_its_float_embedding(tmp_path):
    run_script(LM_SCRIPT, tmp_path / "lm.tflite")
    proc = edgetool_in_process("convert", tmp_path / "lm.tflite", "--quant", "weight-int4", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GATHER" in proc.stdout + proc.stderr  # said in the output ...
    entry = validated(tmp_path / "out" / "manifest.json", "manifest")["artifacts"][0]
    assert entry["quantizer"]["float_ops"] == {"GATHER": 1}  # ... and in the manifest
    assert entry["quantizer"]["quantized_ops"] == {"FULLY_CONNECTED": 4}
