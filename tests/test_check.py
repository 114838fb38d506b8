"""edgetool check: its verdict for litert-cpu, tflm and tfjs equals whether the artefact really runs there (checked
with the runtimes themselves, in child processes), plus the report format, exit codes and verbatim output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edge_tool.check.targets.gpu import warnings_by_op
from edge_tool.nodejs.tfjs_session import tfjs_bundle_path
from tests.edgetool_runs import edgetool_in_process, run_edgetool
from tests.hostile.harness import Case, run_case
from tests.target_models import flex_model, gelu_model, lstm_model  # noqa: F401  (fixtures)

LITERT_RUNS = """
import sys, numpy as np
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path=sys.argv[1])
for d in it.get_input_details():
    sig = [1 if s < 0 else int(s) for s in d["shape_signature"]]
    it.resize_tensor_input(d["index"], sig)
it.allocate_tensors()
for d in it.get_input_details():
    it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
it.invoke()
"""

TFLM_RUNS = """
import sys, numpy as np
from tflite_micro import runtime
it = runtime.Interpreter.from_bytes(open(sys.argv[1], "rb").read(), arena_size=8 << 20)
d = it.get_input_details(0)
it.set_input(np.zeros(d["shape"], d["dtype"]), 0)
it.invoke()
"""

TFJS_RUNS = """
const [bundle, dir] = process.argv.slice(-2);  // node -e: no script path in argv
const tf = require(bundle);
const fs = require('fs');

const handler = { load: async () => {
  const mj = JSON.parse(fs.readFileSync(dir + '/model.json', 'utf8'));
  const bufs = mj.weightsManifest.flatMap((g) => g.paths.map((p) => fs.readFileSync(dir + '/' + p)));
  const all = Buffer.concat(bufs);
  return { modelTopology: mj.modelTopology, weightSpecs: mj.weightsManifest.flatMap((g) => g.weights),
           weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
           signature: mj.signature, userDefinedMetadata: mj.userDefinedMetadata };
} };
(async () => {
  const m = await tf.loadGraphModel(handler);
  const inputs = m.inputs.map((i) => tf.zeros(i.shape.map((s) => (s < 0 ? 1 : s)), i.dtype));
  const out = await m.executeAsync(inputs.length === 1 ? inputs[0] : inputs);
  (Array.isArray(out) ? out : [out]).forEach((t) => t.dataSync());
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


def _runs(script: str, *args) -> bool:
    return (
        subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, timeout=300).returncode
        == 0
    )


def _tfjs_runs(saved_model: Path, out: Path) -> bool:
    """Reality for tfjs: tensorflowjs converts it and @tensorflow/tfjs (vendored, Node) executes it."""
    if run_edgetool("convert", saved_model, "--format", "tfjs", "-o", out).returncode != 0:
        return False

    tfjs = tfjs_bundle_path()  # the vendored tf.min.js (UMD, require-able in Node)
    proc = subprocess.run(["node", "-e", TFJS_RUNS, str(tfjs), str(out / "tfjs")], capture_output=True, timeout=300)
    return proc.returncode == 0


def _check(path: Path, *targets: str) -> dict:
    proc = edgetool_in_process("check", path, "--target", ",".join(targets), "--json")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert (proc.returncode == 1) == bool(report["failed"])
    return {r["target"]: r for r in report["results"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits", "lstm", "flex", "gelu"])
def test_verdicts_match_reality(name, request, tmp_path):
    model = request.getfixturevalue({"digits": "digits_model"}.get(name, f"{name}_model"))
    fp32, int8 = tmp_path / "fp32", tmp_path / "int8"
    assert edgetool_in_process("convert", model, "--quant", "fp32", "--allow-select-tf-ops", "-o", fp32).returncode == 0
    assert edgetool_in_process("convert", model, "--quant", "int8", "--allow-select-tf-ops", "-o", int8).returncode == 0
    fp32_file, int8_file = next(fp32.glob("*.tflite")), next(int8.glob("*.tflite"))
    reality = {
        "litert-cpu": _runs(LITERT_RUNS, fp32_file),
        "tflm": _runs(TFLM_RUNS, int8_file),
        "tfjs": _tfjs_runs(model, tmp_path / "tfjs"),
    }
    verdicts = {
        "litert-cpu": _check(fp32_file, "litert-cpu")["litert-cpu"],
        "tflm": _check(int8_file, "tflm")["tflm"],
        "tfjs": _check(model, "tfjs")["tfjs"],
    }
    from_model = _check(model, "litert-cpu", "tflm")
    for target, runs in reality.items():
        assert (verdicts[target]["verdict"] != "fails") == runs, (name, target, verdicts[target])
        assert verdicts[target]["findings"] or runs
        if target in from_model:  # the SavedModel path converts the same artefacts itself
            assert from_model[target]["verdict"] == verdicts[target]["verdict"], (name, target)
    expected = {
        "digits": (True, True, True),
        "lstm": (True, True, True),
        "flex": (False, False, True),
        "gelu": (True, False, False),
    }[name]
    assert tuple(reality[t] for t in ("litert-cpu", "tflm", "tfjs")) == expected
    named = {f["op"] for v in verdicts.values() for f in v["findings"]}
    assert {"flex": {"FlexErf"}, "gelu": {"GELU", "Erfc"}}.get(name, set()) <= named


@pytest.mark.slow
def test_model_check_every_target(lstm_model):
    proc = edgetool_in_process("check", lstm_model)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    for line in ("litert-cpu  runs", "gpu         partial", "tflm        runs", "litertjs    fails"):
        assert line in proc.stdout, proc.stdout
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in proc.stdout and "Variable tensors" in proc.stdout
    assert "will not run on: litertjs, edgetpu" in proc.stderr


def test_bad_input_exit_2(tmp_path):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a flatbuffer at all")
    for args, needle in (
        ([tmp_path / "missing"], "does not exist"),
        ([junk], "TFL3"),
        ([junk, "--target", "npu"], "Invalid value for '--target'"),  # Typer's, before any work
    ):
        proc = edgetool_in_process("check", *args)
        assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_op_names_printed_verbatim(tmp_path, flex_model):
    """A custom op named like Rich markup is printed as written, not interpreted."""
    out = tmp_path / "c"
    assert (
        edgetool_in_process("convert", flex_model, "--quant", "fp32", "--allow-select-tf-ops", "-o", out).returncode
        == 0
    )
    data = next(out.glob("*.tflite")).read_bytes()
    assert data.count(b"FlexErf") == 1
    evil = tmp_path / "evil.tflite"
    evil.write_bytes(data.replace(b"FlexErf", b"[bold]X"))
    proc = edgetool_in_process("check", evil, "--target", "tflm")
    assert proc.returncode == 1 and "[bold]X: unsupported" in proc.stdout, proc.stdout + proc.stderr
    proc = edgetool_in_process("check", evil, "--target", "tfjs")
    assert proc.returncode == 2 and "TFJS graph model" in proc.stderr


def test_gpu_analyzer_warnings_parsed():
    report = (
        "Subgraph#0 main(T#0) -> [T#3]\n  Op#0 CONV_2D(T#0, T#1) -> [T#2]\n  Op#1 TOPK_V2(T#2) -> [T#3]\n"
        "GPU COMPATIBILITY WARNING: Not supported op TOPK_V2\n\n"
        "GPU COMPATIBILITY WARNING: Subgraph#0 has GPU delegate compatibility issues at nodes 1\n"
    )
    assert warnings_by_op(report) == [("TOPK_V2 (node 1)", "Not supported op TOPK_V2")]


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_hostile_inputs(tmp_path, flex_model):
    """Damaged or wrong inputs: exit 2 naming the file, no traceback, nothing left in the cwd or TMPDIR."""
    root = tmp_path / "case"
    root.mkdir()
    out = tmp_path / "c"
    assert (
        edgetool_in_process("convert", flex_model, "--quant", "fp32", "--allow-select-tf-ops", "-o", out).returncode
        == 0
    )
    data = next(out.glob("*.tflite")).read_bytes()
    (root / "cut.tflite").write_bytes(data[: len(data) // 2])
    (root / "empty").mkdir()
    for case in (
        Case("truncated", ("check", "{root}/cut.tflite"), names=("cut.tflite", "truncated or damaged")),
        Case("not a model", ("check", "{root}/empty", "-t", "tflm"), names=("empty", "saved_model.pb")),
        Case(
            "micro fp16",
            ("convert", str(flex_model), "--quant", "fp16", "--format", "micro", "-o", "{root}/o"),
            names=("--format micro", "fp16"),
        ),
    ):
        run_case(case, root)
