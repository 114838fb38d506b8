"""--format micro and eval --runtime tflm: the C sources hold the exact flatbuffer, the resolver registers exactly
the model's ops, the measured arena is the smallest that works (checked against tflite_micro directly), TFLM's
int8 outputs equal LiteRT's, and refusals (non-integer modes, ops TFLM lacks) exit 2 writing nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.micro.resolver import resolver_method
from edge_tool.micro.sources import c_identifier
from tests.edgetool_runs import edgetool_in_process
from tests.schema_check import validated
from tests.target_models import gelu_model  # noqa: F401  (fixture)

ORACLE = """
import sys, numpy as np
from tflite_micro import runtime
data = open(sys.argv[1], "rb").read()
it = runtime.Interpreter.from_bytes(data, arena_size=int(sys.argv[2]))
d = it.get_input_details(0)
it.set_input(np.zeros(d["shape"], d["dtype"]), 0)
it.invoke()
"""


def _tflm_runs(model: Path, arena: int) -> bool:
    """tflite_micro's own interpreter, in a child process (it can segfault on a too-small arena)."""
    return subprocess.run([sys.executable, "-c", ORACLE, str(model), str(arena)], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def micro_out(digits_model, tmp_path_factory) -> tuple[Path, dict, str]:
    out = tmp_path_factory.mktemp("micro") / "out"
    proc = edgetool_in_process(
        "convert", digits_model, "--quant", "int8", "--io-type", "int8", "--format", "micro", "-o", out
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = validated(out / "manifest.json", "manifest")
    return out, manifest, proc.stdout


def test_sources_hold_the_flatbuffer_aligned(micro_out):
    out, manifest, _ = micro_out
    tflite = out / manifest["artifacts"][0]["path"]
    cc = (out / "model_int8_model_data.cc").read_text()
    assert "alignas(16) const unsigned char model_int8_model_data[]" in cc
    body = cc.split("= {", 1)[1].split("};", 1)[0]
    data = bytes(int(h, 16) for h in re.findall(r"0x([0-9a-f]{2})", body))
    assert data == tflite.read_bytes()
    assert f"model_int8_model_data_len = {len(data)};" in cc
    header = (out / "model_int8_model_data.h").read_text()
    assert "extern const unsigned char model_int8_model_data[];" in header
    assert (
        f"model_int8_tensor_arena_size = {manifest['artifacts'][0]['micro']['tensor_arena']['recommended_bytes']}"
        in header
    )
    if shutil.which("g++"):
        proc = subprocess.run(
            ["g++", "-std=c++11", "-c", str(out / "model_int8_model_data.cc"), "-o", str(out.parent / "m.o")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr


def test_resolver_registers_exactly_the_models_ops(micro_out):
    out, manifest, stdout = micro_out
    rec = manifest["artifacts"][0]
    ops = list(rec["tensors"]["ops"])
    resolver = (out / "model_int8_op_resolver.h").read_text()
    assert f"MicroMutableOpResolver<{len(ops)}>" in resolver
    assert re.findall(r"resolver\.(Add\w+)\(\)", resolver) == [resolver_method(op) for op in ops]
    assert {"AddConv2D", "AddFullyConnected", "AddSoftmax"} <= set(re.findall(r"resolver\.(Add\w+)\(\)", resolver))
    assert rec["micro"]["resolver"]["methods"] == [resolver_method(op) for op in ops]


def test_arena_is_the_smallest_that_runs(micro_out):
    out, manifest, stdout = micro_out
    micro = manifest["artifacts"][0]["micro"]
    arena, tflite = micro["tensor_arena"], out / manifest["artifacts"][0]["path"]
    assert _tflm_runs(tflite, arena["minimum_bytes"])
    assert not _tflm_runs(tflite, arena["minimum_bytes"] - 16)
    assert arena["minimum_bytes"] <= arena["recommended_bytes"] <= arena["minimum_bytes"] * 1.25 + 1024
    assert micro["flash_bytes"] == tflite.stat().st_size
    assert (
        f"tensor arena {arena['recommended_bytes']} bytes" in stdout and f"flash {micro['flash_bytes']} bytes" in stdout
    )


def test_tflm_int8_outputs_equal_litert(micro_out, digits_model):
    """Bit-identical to LiteRT's builtin kernels; LiteRT's default XNNPACK path rounds a few elements by ≤2 LSB."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from tflite_micro import runtime

    out, manifest, _ = micro_out
    tflite = out / manifest["artifacts"][0]["path"]
    x = np.load(digits_model / "eval.npz")["x"]
    tflm = runtime.Interpreter.from_bytes(tflite.read_bytes(), arena_size=1 << 20)
    outs = {}
    for resolver in (OpResolverType.AUTO, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES):
        it = Interpreter(model_path=str(tflite), experimental_op_resolver_type=resolver)
        it.allocate_tensors()
        inp, outp = it.get_input_details()[0], it.get_output_details()[0]
        s, z = inp["quantization"]
        q = np.clip(np.round(x / s + z), -128, 127).astype(np.int8)
        rows, mine = [], []
        for i in range(len(q)):
            it.set_tensor(inp["index"], q[i : i + 1])
            it.invoke()
            rows.append(it.get_tensor(outp["index"]).copy())
            if resolver is OpResolverType.AUTO:
                tflm.set_input(q[i : i + 1], 0)
                tflm.invoke()
                mine.append(np.array(tflm.get_output(0)))
        outs[resolver] = np.concatenate(rows)
        outs.setdefault("tflm", np.concatenate(mine) if mine else None)
    t = outs["tflm"]
    assert t.dtype == np.int8
    assert np.array_equal(t, outs[OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES])
    xnn = outs[OpResolverType.AUTO]
    diff = np.abs(t.astype(int) - xnn.astype(int))
    print(
        f"TFLM vs LiteRT+XNNPACK: {int((diff > 0).sum())} of {diff.size} int8 outputs differ, by at most {diff.max()}"
    )
    assert np.mean(diff > 0) < 0.01
    assert np.mean(t.argmax(1) == xnn.argmax(1)) == 1.0


def test_eval_runtime_tflm_and_gates(micro_out, digits_model, tmp_path):
    out, manifest, _ = micro_out
    tflite = out / manifest["artifacts"][0]["path"]
    data = digits_model / "eval.npz"
    reports = {}
    for runtime in ("litert", "tflm"):
        proc = edgetool_in_process(
            "eval",
            tflite,
            "-r",
            digits_model,
            "-d",
            data,
            "--runtime",
            runtime,
            "--runs",
            "5",
            "--json",
            tmp_path / f"{runtime}.json",
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        reports[runtime] = json.loads((tmp_path / f"{runtime}.json").read_text())["results"][0]
    lit, tfl = reports["litert"], reports["tflm"]
    assert tfl["runtime"].startswith("tflite-micro")
    assert tfl["tensor_arena"]["minimum_bytes"] == manifest["artifacts"][0]["micro"]["tensor_arena"]["minimum_bytes"]
    assert tfl["flash_bytes"] == tflite.stat().st_size and tfl["peak_rss_mb"] is None
    assert (
        abs(tfl["accuracy"] - lit["accuracy"]) <= 1 / 360
        and abs(tfl["top1_agreement"] - lit["top1_agreement"]) <= 1 / 360
    )
    assert tfl["max_abs_error"] < 0.05
    limit = tfl["tensor_arena"]["minimum_bytes"] / 1024 - 0.5
    gate = edgetool_in_process(
        "eval",
        tflite,
        "-r",
        digits_model,
        "-d",
        data,
        "--runtime",
        "tflm",
        "--runs",
        "1",
        "--max-arena-kb",
        f"{limit:.2f}",
    )
    assert gate.returncode == 1 and "--max-arena-kb" in gate.stderr + gate.stdout
    bad = edgetool_in_process("eval", tflite, "-r", digits_model, "-d", data, "--max-flash-kb", "10")
    assert bad.returncode == 2 and "--runtime tflm" in bad.stderr and "Traceback" not in bad.stderr


def test_non_integer_modes_refused(digits_model, tmp_path):
    proc = edgetool_in_process(
        "convert", digits_model, "--quant", "fp32,dynamic", "--format", "micro", "-o", tmp_path / "o"
    )
    assert proc.returncode == 2 and "full-integer" in proc.stderr and "fp32, dynamic" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_ops_tflm_lacks_are_named(gelu_model, tmp_path):
    proc = edgetool_in_process("convert", gelu_model, "--quant", "int8", "--format", "micro", "-o", tmp_path / "o")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "GELU" in proc.stderr and "TFLM has no kernel" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob(".o*"))
    plain = tmp_path / "plain"
    assert edgetool_in_process("convert", gelu_model, "--quant", "int8", "-o", plain).returncode == 0
    ev = edgetool_in_process(
        "eval", next(plain.glob("*.tflite")), "-r", gelu_model, "-d", gelu_model / "eval.npz", "--runtime", "tflm"
    )
    assert ev.returncode == 2 and "GELU" in ev.stderr and "Traceback" not in ev.stderr, ev.stderr


@pytest.mark.parametrize(
    ("op", "method"),
    [
        ("FULLY_CONNECTED", "AddFullyConnected"),
        ("CONV_2D", "AddConv2D"),
        ("DEPTHWISE_CONV_2D", "AddDepthwiseConv2D"),
        ("MAX_POOL_2D", "AddMaxPool2D"),
        ("RELU6", "AddRelu6"),
        ("UNIDIRECTIONAL_SEQUENCE_LSTM", "AddUnidirectionalSequenceLSTM"),
        ("PADV2", "AddPadV2"),
        ("BATCH_MATMUL", "AddBatchMatMul"),
        ("TFLite_Detection_PostProcess", "AddDetectionPostprocess"),
        ("FlexErf", None),
    ],
)
def test_resolver_method_names(op, method):
    assert resolver_method(op) == method


@pytest.mark.parametrize(
    ("name", "ident"),
    [
        ("digits_int8", "digits_int8"),
        ("my-model v2", "my_model_v2"),
        ("3net", "m_3net"),
        ("int", "int_model"),
        ("é..", "model"),
    ],
)
def test_c_identifier(name, ident):
    assert c_identifier(name) == ident
