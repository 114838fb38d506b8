"""A .tflite whose indices point out of range is refused (exit 2) by every command, before anything follows one.

The files are made from real converted models (a dense classifier with a signature and embedded metadata, and a
model with a WHILE loop, whose operator names two other subgraphs) and corrupted by hand through the schema's object
API: one index at a time set out of range, re-packed as a valid flatbuffer. ``check_indices`` is run on each in
process; the reported case (an operator input at tensor 99999) goes through every command that reads a .tflite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from edge_tool.errors import ModelError
from edge_tool.parsers.tflite_indices import check_indices
from edge_tool.parsers.tflite_schema import tflite_schema
from tests.builds import run_script
from tests.edgetool_runs import run_edgetool
from tests.hostile.harness import Case, run_case

_WHILE_SCRIPT = """
import sys, tensorflow as tf
class Loop(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x"), tf.TensorSpec([], tf.int32, name="n")])
    def serve(self, x, n):
        i, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 0.5 + 1.0), [tf.constant(0), x])
        return {"y": y}
m = Loop()
conv = tf.lite.TFLiteConverter.from_concrete_functions([m.serve.get_concrete_function()], m)
open(sys.argv[1], "wb").write(conv.convert())
"""


@pytest.fixture(scope="session")
def tflites(models_for_indices) -> dict[str, bytes]:
    return {k: v.read_bytes() for k, v in models_for_indices.items()}


@pytest.fixture(scope="session")
def models_for_indices(flat_tflite_for_indices, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tflite-indices")
    run_script(_WHILE_SCRIPT, root / "while.tflite")
    return {"dense": flat_tflite_for_indices, "while": root / "while.tflite"}


@pytest.fixture(scope="session")
def flat_tflite_for_indices(flat_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tflite-indices-dense") / "out"
    proc = run_edgetool("convert", flat_model, "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("*.tflite"))


def corrupt(data: bytes, damage: Callable) -> bytes:
    """``data`` unpacked with the schema's object API, ``damage(model)`` applied, packed again as a TFL3 file."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    damage(model)
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _op(model, kind: str = "") -> object:
    schema = tflite_schema()
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    for op in model.subgraphs[0].operators:
        code = model.operatorCodes[op.opcodeIndex]
        if not kind or names.get(max(code.builtinCode, code.deprecatedBuiltinCode)) == kind:
            return op
    raise AssertionError(f"no {kind} operator")


def _set(obj, name: str, value) -> Callable:
    return lambda model: setattr(obj(model), name, value)


def _first_input_to(value: int) -> Callable:
    def damage(model):
        op = _op(model)
        op.inputs = np.array([value, *op.inputs[1:]], dtype=np.int32)

    return damage


CASES = [
    # (model, name, damage, words the message must hold)
    ("dense", "op-input-99999", _first_input_to(99999), ("operator 0 input is tensor 99999",)),
    ("dense", "op-input-minus-5", _first_input_to(-5), ("input is tensor -5",)),
    ("dense", "op-input-one-past-the-end", lambda m: _first_input_to(len(m.subgraphs[0].tensors))(m), ("tensors",)),
    (
        "dense",
        "op-output",
        lambda m: setattr(_op(m), "outputs", np.array([4242], np.int32)),
        ("output is tensor 4242",),
    ),
    (
        "dense",
        "op-output-minus-1",
        lambda m: setattr(_op(m), "outputs", np.array([-2], np.int32)),
        ("output is tensor -2",),
    ),
    (
        "dense",
        "op-intermediate",
        lambda m: setattr(_op(m), "intermediates", np.array([777], np.int32)),
        ("intermediate",),
    ),
    ("dense", "opcode-index", lambda m: setattr(_op(m), "opcodeIndex", 300), ("opcode index 300",)),
    ("dense", "tensor-buffer", lambda m: setattr(m.subgraphs[0].tensors[0], "buffer", 65000), ("buffer 65000",)),
    (
        "dense",
        "subgraph-input",
        lambda m: setattr(m.subgraphs[0], "inputs", np.array([999], np.int32)),
        ("input is tensor 999",),
    ),
    (
        "dense",
        "subgraph-output",
        lambda m: setattr(m.subgraphs[0], "outputs", np.array([-3], np.int32)),
        ("tensor -3",),
    ),
    (
        "dense",
        "signature-tensor",
        lambda m: setattr(m.signatureDefs[0].inputs[0], "tensorIndex", 5000),
        ("signature 0 input 0 is tensor 5000",),
    ),
    ("dense", "signature-subgraph", lambda m: setattr(m.signatureDefs[0], "subgraphIndex", 7), ("names subgraph 7",)),
    ("dense", "metadata-buffer", lambda m: setattr(m.metadata[0], "buffer", 9999), ("metadata 0 uses buffer 9999",)),
    ("dense", "no-subgraph", lambda m: setattr(m, "subgraphs", []), ("no subgraph",)),
    (
        "while",
        "while-body-subgraph",
        lambda m: setattr(_op(m, "WHILE").builtinOptions, "bodySubgraphIndex", 12),
        ("BodySubgraphIndex is subgraph 12",),
    ),
    (
        "while",
        "while-cond-subgraph",
        lambda m: setattr(_op(m, "WHILE").builtinOptions, "condSubgraphIndex", 3),
        ("CondSubgraphIndex is subgraph 3",),
    ),
]


@pytest.mark.parametrize("model,damage,words", [(c[0], c[2], c[3]) for c in CASES], ids=[c[1] for c in CASES])
def test_each_index_out_of_range_is_refused(tflites, model, damage, words):
    with pytest.raises(ModelError) as err:
        check_indices(corrupt(tflites[model], damage), "x.tflite")
    assert "x.tflite" in str(err.value) and all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize("model", ["dense", "while"])
def test_real_models_and_their_repacked_copies_pass(tflites, model):
    check_indices(tflites[model], "x.tflite")
    check_indices(corrupt(tflites[model], lambda m: None), "x.tflite")  # the repacking itself damages nothing


def test_optional_input_minus_one_is_fine(tflites):
    check_indices(corrupt(tflites["dense"], _first_input_to(-1)), "x.tflite")


@pytest.mark.parametrize("cut", [12, 100, 0.5])
def test_truncated_flatbuffer_is_refused(tflites, cut):
    data = tflites["while"]
    data = data[: int(len(data) * cut) if isinstance(cut, float) else cut]
    with pytest.raises(ModelError, match="x.tflite"):
        check_indices(data, "x.tflite")


def test_many_problems_are_listed_once(tflites):
    def damage(model):
        for op in model.subgraphs[0].operators:
            op.inputs = np.array([99999], np.int32)

    with pytest.raises(ModelError) as err:
        check_indices(corrupt(tflites["dense"], damage), "x.tflite")
    assert "more)" in str(err.value) or str(err.value).count("99999") >= 1


CLI = [
    ("inspect", ("inspect", "{root}/bad.tflite")),
    ("inspect-json", ("inspect", "{root}/bad.tflite", "--json")),
    ("check", ("check", "{root}/bad.tflite")),
    ("eval", ("eval", "{root}/bad.tflite", "-r", "FLAT", "--data", "{root}/x.npy")),
    ("demo-litert", ("demo", "FLAT", "--litert", "--tflite", "{root}/bad.tflite", "-o", "{root}/site")),
]


@pytest.mark.slow
@pytest.mark.parametrize("args", [a for _, a in CLI], ids=[n for n, _ in CLI])
def test_every_command_refuses_operator_input_99999(args, tflites, flat_model, tmp_path):
    root = tmp_path / "case"
    root.mkdir()
    (root / "bad.tflite").write_bytes(corrupt(tflites["dense"], _first_input_to(99999)))
    np.save(root / "x.npy", np.zeros((4, 4), np.float32))
    args = tuple(str(flat_model) if a == "FLAT" else a for a in args)
    run_case(replace(Case("tensor-99999", args), names=("bad.tflite", "tensor 99999")), root)
