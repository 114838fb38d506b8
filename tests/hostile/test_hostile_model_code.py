"""A model file is code: edgetool never runs it by accident (issue 21, items 1, 2 and 4).

Python in a Keras config (a Lambda's marshalled bytecode in .h5, .keras and keras_metadata.pb) and graph ops with
effects outside tensors (WriteFile, py_function, SaveV2 outside the saver, Flex WriteFile in a .tflite) are found
by reading the files; every command that would load or run them exits 2 naming the layer or op, unless
``--trust-model-code``. The hostile code writes ``RAN`` into the case directory, so a case that executed it fails
both its own check and the harness's snapshot. With the flag the same runs do execute it (the tests can fail).
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_tool.errors import ModelError
from edge_tool.trust.graph_scan import scan_saved_model
from edge_tool.trust.guard import keras_code, side_effect_ops
from edge_tool.trust.keras_code import find_code, metadata_jsons
from edge_tool.trust.side_effects import CONDITIONAL, SIDE_EFFECT_OPS, effect_of
from tests.hostile.harness import REPO, Case, run_case
from tests.hostile.model_code_fixtures import MARKER, code_models, code_root  # noqa: F401 (fixtures)

TRUST = "--trust-model-code"
LAMBDA = ("evil_lambda", "Lambda", TRUST)
CAL = ("--calibration", "{root}/data.npz")

KERAS_CODE_CASES = {
    "convert-h5": ("convert", "{root}/lambda.h5", "-o", "{root}/out"),
    "convert-keras": ("convert", "{root}/lambda.keras", "-o", "{root}/out"),
    "convert-savedmodel-batch": ("convert", "{root}/lambda_sm", "--batch", "1", "-o", "{root}/out"),
    "convert-savedmodel-qat": (
        "convert",
        "{root}/lambda_sm",
        "--quant",
        "qat",
        "--train-data",
        "{root}/data.npz",
        *CAL,
        "-o",
        "{root}/out",
    ),
    "check-h5": ("check", "{root}/lambda.h5", "--target", "litert-cpu"),
    "check-keras": ("check", "{root}/lambda.keras", "--target", "litert-cpu"),
    "demo-litert-savedmodel": ("demo", "{root}/lambda_sm", "--litert", *CAL, "-o", "{root}/site"),
}

GRAPH_CASES = {
    "check-calibration-write": (("check", "{root}/write_sm", *CAL), "WriteFile"),
    "convert-int8-write": (("convert", "{root}/write_sm", "-q", "int8", *CAL, "-o", "{root}/out"), "WriteFile"),
    "convert-int8-flex-write": (
        ("convert", "{root}/write_sm", "-q", "int8", "--allow-select-tf-ops", *CAL, "-o", "{root}/out"),
        "WriteFile",
    ),
    "eval-reference-write": (
        ("eval", "{root}/clean.tflite", "-r", "{root}/write_sm", "-d", "{root}/data.npz", "--runs", "1"),
        "WriteFile",
    ),
    "convert-pyfunc": (("convert", "{root}/pyfunc_sm", "-o", "{root}/out"), "EagerPyFunc"),
    "convert-auto-write": (
        (
            "convert",
            "{root}/write_sm",
            "-q",
            "auto",
            "--max-drop",
            "0.5",
            "--eval-data",
            "{root}/data.npz",
            *CAL,
            "-o",
            "{root}/out",
        ),
        "WriteFile",
    ),
    "convert-qat-write": (
        ("convert", "{root}/write_sm", "-q", "qat", "--train-data", "{root}/data.npz", *CAL, "-o", "{root}/out"),
        "WriteFile",
    ),
    "check-pyfunc": (("check", "{root}/pyfunc_sm", *CAL), "EagerPyFunc"),
    "eval-reference-pyfunc": (
        ("eval", "{root}/clean.tflite", "-r", "{root}/pyfunc_sm", "-d", "{root}/data.npz", "--runs", "1"),
        "EagerPyFunc",
    ),
    "convert-savev2-outside-saver": (("convert", "{root}/save_sm", "-o", "{root}/out"), "SaveV2"),
    "demo-write": (("demo", "{root}/write_sm", "-o", "{root}/site"), "WriteFile"),
    "eval-flex-write-tflite": (
        ("eval", "{root}/flex_write.tflite", "-r", "{root}/clean_sm", "-d", "{root}/data.npz", "--runs", "1"),
        "FlexWriteFile",
    ),
    "check-flex-write-tflite": (("check", "{root}/flex_write.tflite", "--target", "litert-cpu"), "FlexWriteFile"),
}


@pytest.mark.parametrize("name", sorted(KERAS_CODE_CASES))
def test_python_in_a_keras_config_is_never_run(code_root, name):
    run_case(Case(name, KERAS_CODE_CASES[name], exit_code=2, names=LAMBDA), code_root)
    assert not (code_root / MARKER).exists()


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
def test_graph_side_effects_are_never_run(code_root, name):
    args, op = GRAPH_CASES[name]
    proc = run_case(Case(name, args, exit_code=2, names=(op, TRUST)), code_root)
    assert not (code_root / MARKER).exists()
    if not op.startswith("Flex"):
        assert "in function __inference_serve" in proc.stderr  # the function the op is in


def test_inspect_reports_lambda_without_running_it(code_root):
    proc = run_case(
        Case("inspect-lambda", ("inspect", "{root}/lambda_sm", "--json"), exit_code=0, names=("evil_lambda",)),
        code_root,
    )
    d = json.loads(proc.stdout)
    assert d["model_code"]["python"] == [
        {"layer": "evil_lambda", "kind": "Lambda layer with marshalled Python bytecode", "where": "keras_metadata.pb"}
    ]
    assert d["keras"]["reloadable_as_keras"] is None and not (code_root / MARKER).exists()
    text = run_case(
        Case("inspect-lambda-text", ("inspect", "{root}/lambda_sm"), exit_code=0, names=("evil_lambda", "not tried")),
        code_root,
    )
    assert "Traceback" not in text.stderr


@pytest.mark.parametrize("model, op", [("write_sm", "WriteFile"), ("pyfunc_sm", "EagerPyFunc")])
def test_inspect_lists_side_effect_ops_and_exits_0(code_root, model, op):
    proc = run_case(Case(f"inspect-{model}", ("inspect", f"{{root}}/{model}", "--json"), exit_code=0), code_root)
    found = json.loads(proc.stdout)["model_code"]["side_effect_ops"]
    assert [f["op"] for f in found] == [op] and found[0]["where"][0].startswith("function __inference_serve")
    run_case(Case(f"inspect-{model}-text", ("inspect", f"{{root}}/{model}"), exit_code=0, names=(op,)), code_root)
    assert not (code_root / MARKER).exists()


def test_inspect_lists_flex_side_effect_ops_of_a_tflite(code_root):
    """LiteRT cannot open a Flex model; inspect reads its signature from the flatbuffer and lists the op."""
    proc = run_case(Case("inspect-flex", ("inspect", "{root}/flex_write.tflite", "--json"), exit_code=0), code_root)
    d = json.loads(proc.stdout)
    assert [f["op"] for f in d["model_code"]["side_effect_ops"]] == ["FlexWriteFile"]
    assert d["signatures"][0]["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 4]}]


@pytest.mark.parametrize(
    "args",
    [
        ("convert", "{root}/lambda.h5", "-o", "{root}/out", TRUST),
        ("convert", "{root}/lambda_sm", "--batch", "1", "-o", "{root}/out", TRUST),
        ("inspect", "{root}/lambda_sm", TRUST),
        ("eval", "{root}/clean.tflite", "-r", "{root}/write_sm", "-d", "{root}/data.npz", "--runs", "1", TRUST),
    ],
    ids=["convert-h5", "convert-batch", "inspect", "eval-write"],
)
def test_trusted_model_code_runs(code_root, args):
    """The opt-in really runs the code (so the refusals above are what keeps the marker away)."""
    run_case(Case("trusted", args, exit_code=0, may_create=("out", MARKER)), code_root)
    assert (code_root / MARKER).exists()


def test_keras_savedmodel_with_a_lambda_converts_without_keras(code_root):
    """Its graph is all convert needs: no Keras object, no refusal, nothing run."""
    run_case(
        Case(
            "convert-lambda-graph",
            ("convert", "{root}/lambda_sm", "-o", "{root}/out"),
            exit_code=0,
            may_create=("out",),
        ),
        code_root,
    )
    assert not (code_root / MARKER).exists()


@pytest.mark.parametrize(
    "name",
    ["clean_sm", "clean_bn_lstm_sm", "clean_bn_lstm.h5", "clean_bn_lstm.keras", "tf1_sm", "clean.tflite", "table_sm"],
)
def test_clean_models_are_not_flagged(code_models, name):
    assert side_effect_ops(code_models / name) == ()
    if not name.endswith(".tflite"):
        assert keras_code(code_models / name) == ()


@pytest.mark.slow  # not in the quick tier (its measured cost)
@pytest.mark.parametrize("fixture", ["digits_model", "keras3_export", "uint8_model", "flat_model"])
def test_project_fixtures_are_not_flagged(request, fixture):
    path = request.getfixturevalue(fixture)
    assert side_effect_ops(path) == () and keras_code(path) == ()


def test_truncated_saved_model_pb_is_refused_typed(code_root):
    pb = code_root / "write_sm" / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:-40])
    run_case(
        Case(
            "truncated-pb",
            ("convert", "{root}/write_sm", "-o", "{root}/out"),
            exit_code=2,
            names=("saved_model.pb", "not a readable SavedModel protobuf"),
        ),
        code_root,
    )


def test_garbage_keras_metadata_is_refused_typed(code_root):
    (code_root / "lambda_sm" / "keras_metadata.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    run_case(
        Case(
            "garbage-metadata",
            ("inspect", "{root}/lambda_sm"),
            exit_code=2,
            names=("keras_metadata.pb", "not a readable"),
        ),
        code_root,
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_metadata_parser_never_crashes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("meta") / "keras_metadata.pb"
    path.write_bytes(data)
    try:
        assert all(isinstance(s, str) for s in metadata_jsons(path))
    except ModelError:
        pass


@pytest.mark.parametrize(
    "config, kind",
    [
        ({"class_name": "Lambda", "config": {"name": "l", "function": {"class_name": "__lambda__"}}}, "bytecode"),
        ({"module": "os", "class_name": "system", "config": "x"}, "module 'os'"),
        (
            {"module": "keras.layers", "class_name": "Dense", "registered_name": "evil>Layer", "config": {}},
            "evil>Layer",
        ),
        ({"class_name": "TFOpLambda", "config": {"name": "t", "function": "io.write_file"}}, "io.write_file"),
        (
            {"class_name": "Wrapper", "config": {"layer": {"class_name": "X", "config": {"function_type": "lambda"}}}},
            "bytecode",
        ),
    ],
)
def test_config_walker_finds_code_anywhere(config, kind):
    found = find_code({"class_name": "Functional", "config": {"layers": [config]}}, "config.json")
    assert len(found) == 1 and kind in found[0].kind


def test_saver_checkpoint_ops_are_not_flagged_but_a_serving_save_is(code_models):
    assert scan_saved_model(code_models / "clean_sm") == ()
    assert [f.op for f in scan_saved_model(code_models / "save_sm")] == ["SaveV2"]


def test_vocabulary_from_own_assets_is_fine_a_path_of_the_models_choosing_is_not(code_models):
    found = scan_saved_model(code_models / "table_hostile_sm")
    assert [f.op for f in found] == ["InitializeTableFromTextFileV2"]
    assert found[0].where[0].startswith("function __inference_serve")


def test_security_doc_lists_every_flagged_op():
    """docs/security.md's table is the registry's: every op of side_effects.SIDE_EFFECT_OPS and CONDITIONAL."""
    doc = (REPO / "docs" / "security.md").read_text()
    missing = [op for op in [*SIDE_EFFECT_OPS, *CONDITIONAL] if f"`{op}`" not in doc]
    assert not missing, f"docs/security.md does not list {missing}"


def _edit_saved_model(src, dst, edit) -> None:
    """Copy the SavedModel ``src`` to ``dst`` with ``edit(meta_graph)`` applied to its saved_model.pb."""
    from tensorflow.core.protobuf import saved_model_pb2

    shutil.copytree(src, dst)
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString((dst / "saved_model.pb").read_bytes())
    edit(sm.meta_graphs[0])
    (dst / "saved_model.pb").write_bytes(sm.SerializeToString())


def test_saver_ops_reached_from_a_signature_are_flagged(code_models, tmp_path):
    """The saver's own SaveV2 is exempt only while nothing but the saver reaches it."""

    def serve_calls_save(mg):
        save_fn = next(f.signature.name for f in mg.graph_def.library.function if "traced_save" in f.signature.name)
        serve = next(f for f in mg.graph_def.library.function if f.signature.name.startswith("__inference_serve"))
        call = serve.node_def.add(name="evil_call", op="StatefulPartitionedCall")
        call.attr["f"].func.name = save_fn

    def output_needs_save(mg):
        out = mg.signature_def["serving_default"].outputs["y"].name.split(":")[0]
        next(n for n in mg.graph_def.node if n.name == out).input.append("^save/SaveV2")

    _edit_saved_model(code_models / "clean_sm", tmp_path / "tf2", serve_calls_save)
    _edit_saved_model(code_models / "tf1_sm", tmp_path / "tf1", output_needs_save)
    tf2, tf1 = scan_saved_model(tmp_path / "tf2"), scan_saved_model(tmp_path / "tf1")
    assert {f.op for f in tf2} == {"MergeV2Checkpoints", "SaveV2"}
    assert all(f.where[0].startswith("function __inference__traced_save") for f in tf2)
    assert "SaveV2" in {f.op for f in tf1} and all(f.where == ("graph",) for f in tf1)


@pytest.mark.parametrize(
    "op, attrs, flagged",
    [
        ("PrintV2", {"output_stream": "file:///tmp/leak.txt"}, True),
        ("PrintV2", {"output_stream": "stderr"}, False),
        ("DecodeProtoV2", {"descriptor_source": "/etc/x.desc"}, True),
        ("DecodeProtoV2", {"descriptor_source": "local://"}, False),
        ("MatMul", {}, False),
        ("PyFunc", {}, True),
    ],
)
def test_conditional_ops_are_flagged_by_their_attributes(op, attrs, flagged):
    assert (effect_of(op, attrs) is not None) == flagged
