"""The published schemas (edge_tool/schemas/*.schema.json): valid draft 2020-12, in step with their dataclasses
(the serializer's keys are the schema's properties), and hostile files refused with one DataError naming the place.

Real files (every convert mode, --format micro and all, eval --json, decision.json) are checked where the tests
that write them read them (``schema_check.validated``)."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

import edge_tool.schemas as schemas
from edge_tool.auto import Candidate, Decision
from edge_tool.calibration.serial import json_keys
from edge_tool.errors import DataError
from edge_tool.evaluate.report import Report
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, LayerError, ReferenceResult
from edge_tool.schemas import NAMES, check, load
from edge_tool.schemas.convert_options import ConvertOptions
from edge_tool.schemas.manifest import Manifest, ManifestArtifact

LATENCY = {"p50": 0.1, "p90": 0.2, "p99": 0.3, "mean": 0.15, "std": 0.01, "cold_start": None, "runs": 10}
RESULT = {
    "artifact": "m_int8.tflite",
    "format": "tflite",
    "quant": "int8",
    "size_bytes": 5,
    "size_ratio": 0.25,
    "accuracy": 0.9,
    "top_k_accuracy": None,
    "reference_accuracy": 0.91,
    "accuracy_drop": 0.01,
    "top1_agreement": 0.98,
    "max_abs_error": 0.1,
    "mean_abs_error": 0.01,
    "cosine": 0.99,
    "latency_ms": LATENCY,
    "peak_rss_mb": 50.0,
    "threads": 1,
    "runtime": "litert",
}
FULL_RESULT = {
    **RESULT,
    "latency_note": "in a subprocess",
    "per_layer": [{"op": "FC", "tensor": "t", "rmse_over_scale": 0.3, "max_abs_error": 0.1, "scale": 0.5}],
    "accuracy_pass": "batched",
    "failed": "crashed",
    "tensor_arena": {"minimum_bytes": 4},
    "flash_bytes": 9,
    "metrics": {"mae": 1.5, "rmse": 2.0, "r2": 0.4},
    "drift": {"max_abs_error": 0.5},
    "metric_drop": 0.01,
}
CLASSIFIED = {
    **RESULT,
    "metrics": {
        "accuracy": 0.9,
        "top_k": None,
        "per_class": [{"index": 0, "label": "cat", "count": 3, "accuracy": 1.0}],
        "confusion_matrix": {"labels": ["cat"], "counts": [[3]]},
    },
    "drift": {"top1_agreement": 0.98},
    "metric_drop": 0.01,
}
EVAL = {
    "results": [RESULT, FULL_RESULT, CLASSIFIED],
    "reference": {
        "saved_model": "sm",
        "size_bytes": 20,
        "accuracy": 0.91,
        "top_k_accuracy": None,
        "latency_ms": None,
        "runtime": "tensorflow",
        "output": "out",
        "metrics": {"f1_macro": 0.8, "hamming": 0.1},
    },
    "data": {"path": "e.npz", "summary": "10 samples", "samples": 10, "labels": True, "warnings": []},
    "machine": {"cpu": "x"},
    "settings": {"threads": 1, "warmup": 5, "runs": 10},
    "notes": ["n"],
    "timings_s": {"load": 0.5},
    "task": {
        "name": "regression",
        "reason": "r",
        "assumed": False,
        "given": False,
        "main_metric": "r2",
        "higher_is_better": True,
    },
}
CANDIDATE = {
    "name": "int8",
    "quant": "int8",
    "file": "m_int8.tflite",
    "size_bytes": 5,
    "accuracy": 0.9,
    "accuracy_drop": 0.01,
    "latency_ms_p50": 0.1,
    "meets_budget": True,
    "chosen": True,
}
DECISION = {
    "objective": "size",
    "max_drop": 0.02,
    "reference_accuracy": 0.91,
    "threads": 1,
    "chosen": "int8",
    "candidates": [
        CANDIDATE,
        {**CANDIDATE, "name": "int8-selective", "chosen": False, "float_layers": ["a;b"], "failed": "x"},
    ],
    "notes": [],
    "task": "regression",
    "metric": "r2",
}
TENSORS = {
    "ops": {"FULLY_CONNECTED": 1},
    "weight_dtypes": {"int8": 1},
    "activation_dtypes": {"int8": 2},
    "input_dtypes": ["int8"],
    "output_dtypes": ["int8"],
    "weight_params": 32,
    "flex_ops": [],
    "variable_tensors": 0,
}
TFLITE = {
    "path": "m_int8.tflite",
    "format": "tflite",
    "quant": "int8",
    "size_bytes": 5,
    "sha256": "ab",
    "seconds": 1.0,
    "tensors": TENSORS,
    "state_warning": None,
    "metadata": None,
}
MICRO = {
    "files": ["m_model_data.cc"],
    "ops": ["FULLY_CONNECTED"],
    "resolver": {"class": "tflite::MicroMutableOpResolver<1>", "methods": ["AddFullyConnected"]},
    "tensor_arena": {
        "minimum_bytes": 1,
        "recorded_bytes": None,
        "recommended_bytes": 1024,
        "margin": 0.25,
        "method": "m",
    },
    "flash_bytes": 9,
    "flash_note": "n",
    "tflite_micro": "0.dev",
}
OPTIONS = {
    "model": "m",
    "output_dir": "o",
    "modes": ["int8"],
    "output_format": "all",
    "calibration": None,
    "samples": 200,
    "io_type": "model",
    "train_data": None,
    "eval_data": None,
    "qat_epochs": 3,
    "strategy": "default",
    "replicas": 2,
    "format_options": {"tfjs": {"tfjs_quant": "uint8"}},
    "allow_select_tf_ops": False,
    "batch": None,
    "signature": None,
    "seed": 0,
    "force": False,
    "keep_going": True,
    "labels": "labels.txt",
    "metadata": True,
    "input_range": None,
    "input_mean": [127.5],
    "input_std": [127.5],
    "trust_model_code": False,
}
MANIFEST = {
    "schema": "edgetool.convert/1",
    "tool": {"name": "edgetool", "version": "0.1.0"},
    "created": "2026",
    "source": {
        "path": "m",
        "kind": "saved_model",
        "flavor": "keras2",
        "sha256": "0",
        "signature": {
            "key": "serving_default",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [None, 8]}],
            "outputs": [],
        },
        "fixed_batch": None,
    },
    "options": OPTIONS,
    "calibration": {
        "path": "c.npz",
        "source": "c.npz",
        "format": "npz",
        "n_available": 9,
        "n_selected": 2,
        "sampling": "first",
        "seed": 0,
        "samples_requested": 2,
        "inputs": {"x": {"dtype": "float32", "shape": [2, 8], "min": 0.0, "max": 1.0, "mean": 0.5, "std": 0.1}},
        "class_names": None,
        "class_counts": None,
        "warnings": [],
    },
    "input_contract": [
        {
            "input": "x",
            "layout": "NHWC",
            "height": 8,
            "width": 8,
            "channels": 3,
            "channel_order": "RGB",
            "mean": [0.0, 0.0, 0.0],
            "std": [255.0, 255.0, 255.0],
            "resize": "bilinear",
            "source": "default",
            "evidence": "",
        }
    ],
    "artifacts": [
        TFLITE,
        {**TFLITE, "qat": {"shipped": "qat"}, "micro": MICRO},
        {
            "path": "tfjs",
            "format": "tfjs",
            "quant": "none",
            "size_bytes": 5,
            "files": {"model.json": {"size_bytes": 5, "sha256": "cd"}},
            "seconds": 2.0,
        },
        {
            "path": "m_int8.onnx",
            "format": "onnx",
            "quant": "int8",
            "size_bytes": 5,
            "sha256": "ef",
            "seconds": 1.0,
            "opset": 17,
            "agreement": {
                "inputs": "calibration",
                "samples": 4,
                "checked": True,
                "max_abs_error": 0.01,
                "tolerance": None,
                "ok": None,
                "top1_agreement": 1.0,
            },
            "quantization": {
                "format": "QDQ",
                "activations": "int8",
                "weights": "int8",
                "calibration": "MinMax",
                "samples": 4,
            },
        },
    ],
    "versions": {"python": "3.11", "numpy": None},
    "timings_s": {"int8": 1.0, "total": 3.0},
    "failed": {"fp16": "reason"},
}
SAMPLES = {"manifest": (Manifest, MANIFEST), "eval": (Report, EVAL), "decision": (Decision, DECISION)}

# dataclass field -> JSON key, where they differ (written independently of the field metadata they pin)
RENAMED = {
    LatencyStats: {"samples_ms": "samples"},
    LayerError: {"op_name": "op", "tensor_name": "tensor"},
    ArtifactResult: {"latency": "latency_ms", "batching": "accuracy_pass", "arena": "tensor_arena"},
    ReferenceResult: {"path": "saved_model", "latency": "latency_ms"},
    Candidate: {"path": "file"},
}
SCHEMA_OF = {
    Manifest: ("manifest", None),
    ConvertOptions: ("manifest", "options"),
    ManifestArtifact: ("manifest", "artifact"),
    Report: ("eval", None),
    ArtifactResult: ("eval", "result"),
    ReferenceResult: ("eval", "reference"),
    LatencyStats: ("eval", "latency_or_null"),
    LayerError: ("eval", "layer"),
    Decision: ("decision", None),
    Candidate: ("decision", "candidate"),
}


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_draft_2020_12(name):
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"urn:edgetool:schema:{name}:1"


def _sub(name: str, part: str | None) -> dict:
    schema = load(name)
    if part in ("reference", "options"):
        return schema["properties"][part]
    return schema["$defs"][part] if part else schema


@pytest.mark.parametrize("cls", list(SCHEMA_OF), ids=lambda c: c.__name__)
def test_dataclass_fields_are_the_schema_properties(cls):
    sub = _sub(*SCHEMA_OF[cls])
    keys = {RENAMED.get(cls, {}).get(f.name, f.name) for f in dataclasses.fields(cls)}
    assert keys == set(sub["properties"]) == json_keys(cls), cls.__name__
    assert set(sub["required"]) <= keys


@pytest.mark.parametrize("name", NAMES)
def test_samples_round_trip_and_both_checkers_accept_them(name):
    cls, doc = SAMPLES[name]
    jsonschema.Draft202012Validator(load(name)).validate(doc)
    assert cls.from_dict(copy.deepcopy(doc)).to_dict() == doc


def _required_only(schema: dict, doc, root: dict):
    """``doc`` cut down to the keys its schema requires (recursively), to show the dataclass emits exactly them."""
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    if isinstance(doc, dict) and "properties" in schema:
        required = set(schema.get("required", ()))
        branch = schema
        while "if" in branch:  # nested if/then/else: the branch that applies to doc, down to its "required"
            holds = jsonschema.Draft202012Validator(branch["if"]).is_valid(doc)
            branch = branch["then" if holds else "else"]
            required |= set(branch.get("required", ()))
        keep = {
            "options"
        }  # read leniently (an option added later reads as its default), written whole: test_convert_recipe
        return {
            k: v if k in keep else _required_only(schema["properties"][k], v, root)
            for k, v in doc.items()
            if k in required
        }
    if isinstance(doc, list) and "items" in schema:
        return [_required_only(schema["items"], v, root) for v in doc]
    return doc


@pytest.mark.parametrize("name", NAMES)
def test_minimal_documents_round_trip(name):
    """What the schema requires is what to_dict always writes: nothing more, nothing less."""
    cls, doc = SAMPLES[name]
    minimal = _required_only(load(name), doc, load(name))
    # eval's reference and data objects and the free-form manifest parts keep what the writer always writes
    assert minimal != doc and cls.from_dict(copy.deepcopy(minimal)).to_dict() == minimal


def _mutations(doc, path=()):
    """Every way to break or bend ``doc`` one place at a time: each value swapped for each JSON type, each key dropped."""
    odd = [None, True, -1, 1.5, "x", [], {}, [1], {"k": 1}]
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield path + (key,), "drop", None
            yield from _mutations(value, path + (key,))
        yield path + ("_extra",), "set", 1
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _mutations(value, path + (i,))
    for value in odd:
        yield path, "set", value


def _apply(doc, path, op, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if op == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@pytest.mark.parametrize("name", NAMES)
def test_every_bent_document_builds_or_is_one_data_error(name):
    """Each one-place mutation either builds (and then the schema accepts it) or is refused with one DataError
    naming the file and the place: never a KeyError or TypeError from a shape the schema let through."""
    schema, (cls, doc) = load(name), SAMPLES[name]
    validator = jsonschema.Draft202012Validator(schema)
    checked = refused = 0
    for path, op, value in _mutations(doc):
        bent = _apply(doc, path, op, value)
        checked += 1
        try:
            cls.from_dict(bent, "f.json")
        except DataError as exc:
            refused += 1
            message = str(exc)
            assert message.startswith("f.json is not a valid ") and "at $" in message and "\n" not in message
        else:
            assert validator.is_valid(bent), (path, op, value)
        if not validator.is_valid(bent):
            assert refused, (path, op, value)
    assert checked > 200 and refused > checked // 3


def test_data_error_is_one_paragraph_naming_the_file_and_the_place():
    doc = copy.deepcopy(MANIFEST)
    doc["artifacts"][0]["size_bytes"] = "big"
    del doc["tool"]
    with pytest.raises(DataError) as exc:
        Manifest.from_dict(doc, "out/manifest.json")
    message = str(exc.value)
    assert message.startswith("out/manifest.json is not a valid edgetool convert manifest.json: ")
    assert "at $: missing key 'tool'" in message
    assert "at $.artifacts[0].size_bytes: expected integer, found string 'big'" in message
    assert "urn:edgetool:schema:manifest:1" in message and "docs/schemas.md" in message and "\n" not in message


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe",
        b"{",
        b"[" * 100_000 + b"]" * 100_000,
        b"[]",
        b'"x"',
        json.dumps({**MANIFEST, "schema": "edgetool.convert/2"}).encode(),
    ],
    ids=["not-utf8", "truncated", "deep", "array", "string", "future-version"],
)
def test_hostile_files_are_data_errors(tmp_path, content):
    path = tmp_path / "manifest.json"
    path.write_bytes(content)
    for read in (Manifest.read, Decision.read, Report.read):
        with pytest.raises(DataError) as exc:
            read(path)
        assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_oversized_file_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(DECISION))
    monkeypatch.setattr(schemas, "MAX_BYTES", 100)
    monkeypatch.setattr(type(path), "read_bytes", lambda self: pytest.fail("read a file over the limit"))
    with pytest.raises(DataError, match="bytes, over the 100-byte limit.*decision.json is far smaller"):
        Decision.read(path)


def test_check_accepts_what_edgetool_writes():
    check(MANIFEST, "manifest", "m")
    check(EVAL, "eval", "e")
    check(DECISION, "decision", "d")


PREVIOUS = Path(__file__).parent / "data" / "previous_version"
PREVIOUS_FILES = {
    "manifest_all.json": "manifest",
    "manifest_micro.json": "manifest",
    "decision.json": "decision",
    "eval_all.json": "eval",
    "eval_micro.json": "eval",
}


@pytest.mark.parametrize("file", sorted(PREVIOUS_FILES))
def test_files_written_by_the_previous_version_read_and_write_back_byte_for_byte(file):
    """Real files edgetool wrote before the serializer replaced the hand-written to_dict/from_dict pairs
    (commit 392beb4: convert --quant fp32,int8,int16x8 --format all; --format micro --batch 1 with --quant int8;
    --quant auto (its decision.json); eval --per-layer of tflite and tfjs; eval --runtime tflm), read typed and written back unchanged."""
    path = PREVIOUS / file
    cls = {"manifest": Manifest, "eval": Report, "decision": Decision}[PREVIOUS_FILES[file]]
    obj = cls.read(path)
    assert json.dumps(obj.to_dict(), indent=2) + "\n" == path.read_text()
    if file == "manifest_micro.json":  # the nested records are typed, not dicts
        (art,) = obj.artifacts
        assert art.micro.tensor_arena.minimum_bytes > 0 and art.micro.resolver.class_name.startswith("tflite::")
        assert obj.source.fixed_batch.batch == 1 and obj.source.fixed_batch.signature.inputs[0].shape[0] == 1
    if file == "manifest_all.json":
        assert {a.format for a in obj.artifacts} == {"tflite", "tfjs"}
        assert any(a.int16x8 is not None and a.int16x8.float_ops for a in obj.artifacts)
        assert obj.calibration.summary.n_selected == 50 and obj.input_contract[0].channel_order == "L"
    if file == "eval_all.json":
        assert any(r.per_layer for r in obj.results)
    if file == "eval_micro.json":
        assert obj.results[0].arena["minimum_bytes"] > 0 and obj.results[0].flash_bytes > 0
