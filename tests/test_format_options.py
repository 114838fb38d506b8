"""Formats declare their own options and their own manifest records (issue 33): an option no chosen format takes is
refused before any work, the options reach the format through the config's per-format record, and each format's
typed record is written and read back by the one serializer, in the shape the published schema describes."""

from __future__ import annotations

import copy
import dataclasses

import jsonschema
import pytest
from typer.testing import CliRunner

from edge_tool import api
from edge_tool.calibration.serial import from_dict, to_dict
from edge_tool.cli import app
from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.enums import TfjsQuant
from edge_tool.convert.formats import FORMATS, format_options, formats_for, option_owners
from edge_tool.convert.formats.tfjs import TfjsOptions
from edge_tool.errors import UsageError
from edge_tool.schemas import load
from edge_tool.schemas.format_records import AGREEMENT, OnnxAgreement, OnnxQuantization, TfjsAgreement
from edge_tool.schemas.manifest import ManifestArtifact

runner = CliRunner()


@pytest.mark.parametrize("fmt", ["onnx", "micro", "tflite"])
def test_an_option_no_chosen_format_takes_is_refused_in_one_line(tmp_path, fmt):
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["convert", str(tmp_path / "m"), "-o", str(out), "--format", fmt, "--tfjs-quant", "uint8"]
    )
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    chosen = ", ".join(formats_for(fmt))
    assert f"--tfjs-quant is an option of --format tfjs or all, and --format {fmt} builds {chosen}" in message
    assert "Traceback" not in result.output and not out.exists()


def test_the_api_refuses_it_too_and_keeps_taking_tfjs_quant(tmp_path):
    with pytest.raises(UsageError, match="--tfjs-quant is an option of --format tfjs or all"):
        api.convert(tmp_path / "m", tmp_path / "o", format="onnx", tfjs_quant="float16")
    assert format_options("onnx", {"tfjs_quant": None}) == {}  # None: not given (the CLI's default)
    given = format_options("all", {"tfjs_quant": "uint8"})
    assert given == {"tfjs": {"tfjs_quant": "uint8"}}
    config = ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o", output_format="all", format_options=given)
    assert config.format_options == {"tfjs": TfjsOptions(TfjsQuant.UINT8)}
    with pytest.raises(UsageError, match="--format tfjs's options \\(--tfjs-quant\\) do not take"):
        api.convert(tmp_path / "m", tmp_path / "o", format="tfjs", tfjs_quant="bogus")


def test_a_config_carries_each_built_formats_options_with_defaults(tmp_path):
    config = ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o", output_format="all")
    assert config.format_options == {"tfjs": TfjsOptions(TfjsQuant.NONE)}
    assert config.to_dict()["format_options"] == {"tfjs": {"tfjs_quant": "none"}}
    plain = ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o")
    assert plain.format_options == {}
    with pytest.raises(UsageError, match="--tfjs-quant is an option of --format tfjs or all"):
        ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o", format_options={"tfjs": {"tfjs_quant": "uint8"}})


def test_each_option_is_declared_once_and_named_apart_from_the_shared_options():
    rows = [row for spec in FORMATS.values() for row in spec.option_rows]
    assert len({r.name for r in rows}) == len(rows) == len(option_owners())
    shared = {f.name for f in dataclasses.fields(ConvertConfig)}
    assert not {r.name for r in rows} & shared
    shown = " ".join(runner.invoke(app, ["convert", "--help"], env={"COLUMNS": "300"}).output.split())
    for row in rows:  # each has its CLI flag, whose help is the format's
        assert row.flag in shown and row.help in shown, row


ONNX_FP32 = OnnxAgreement(
    "calibration", 16, True, max_abs_error=1e-6, tolerance=1e-4, ok=True, top1_agreement=1.0, measured=True
)
ONNX_INT8 = OnnxAgreement("calibration", 16, True, max_abs_error=0.02, top1_agreement=None, measured=True)
TFJS_OK = TfjsAgreement(
    "seeded random",
    4,
    True,
    max_abs_error=0.0,
    tolerance=1e-5,
    ok=True,
    runtime="tfjs (cpu backend, Node)",
    measured=True,
)
TFJS_SKIPPED = TfjsAgreement("seeded random", 0, False, reason="not run in tfjs: Node not found")
RECORDS = {
    "onnx-fp32": ("onnx", ONNX_FP32, None),
    "onnx-int8": ("onnx", ONNX_INT8, OnnxQuantization(samples=40)),
    "onnx-unchecked": ("onnx", OnnxAgreement("seeded random", 0, False, reason="no input of a known shape"), None),
    "tfjs": ("tfjs", TFJS_OK, None),
    "tfjs-skipped": ("tfjs", TFJS_SKIPPED, None),
}


@pytest.mark.parametrize("case", list(RECORDS))
def test_each_formats_typed_record_round_trips_through_the_schema(case):
    fmt, agreement, quantization = RECORDS[case]
    entry = ManifestArtifact(
        "x", fmt, "int8", 5, sha256="ab", seconds=1.0, opset=17, agreement=agreement, quantization=quantization
    )
    if fmt == "tfjs":
        entry = dataclasses.replace(entry, sha256=None, opset=None, files={})
    doc = to_dict(entry)
    schema = load("manifest")
    jsonschema.Draft202012Validator({**schema["$defs"]["artifact"], "$defs": schema["$defs"]}).validate(doc)
    back = from_dict(ManifestArtifact, copy.deepcopy(doc))
    assert back == entry and type(back.agreement) is AGREEMENT[fmt]
    assert to_dict(back) == doc


def test_the_records_write_what_they_wrote_before():
    """The keys the untyped dicts had: int8's unjudged tolerance/ok as null, a skipped check without figures."""
    assert to_dict(ONNX_INT8) == {
        "inputs": "calibration",
        "samples": 16,
        "checked": True,
        "max_abs_error": 0.02,
        "tolerance": None,
        "ok": None,
        "top1_agreement": None,
    }
    assert to_dict(TFJS_SKIPPED) == {
        "inputs": "seeded random",
        "samples": 0,
        "checked": False,
        "reason": "not run in tfjs: Node not found",
    }
    assert to_dict(OnnxQuantization(samples=40)) == {
        "format": "QDQ",
        "activations": "int8",
        "weights": "int8, per channel, symmetric",
        "calibration": "MinMax",
        "samples": 40,
    }


@pytest.mark.parametrize("record", [OnnxAgreement, TfjsAgreement, OnnxQuantization], ids=lambda c: c.__name__)
def test_record_fields_are_the_schema_properties(record):
    props = load("manifest")["$defs"]["artifact"]["properties"]
    sub = props["quantization" if record is OnnxQuantization else "agreement"]
    written = {f.name for f in dataclasses.fields(record) if f.name != "measured"}
    assert written <= set(sub["properties"]) and set(sub["required"]) <= written


@pytest.mark.parametrize(
    "fmt, option, flag",
    [("tfjs", {"io_type": "int8"}, "--io-type"), ("onnx", {"allow_select_tf_ops": True}, "--allow-select-tf-ops")],
)
def test_a_shared_option_only_some_formats_honour_is_refused_for_the_others(tmp_path, fmt, option, flag):
    """--io-type int8 with --format tfjs used to write a float-I/O graph model without a word."""
    with pytest.raises(UsageError) as err:
        ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o", output_format=fmt, **option)
    assert f"{flag} is an option of --format tflite, micro" in str(err.value) and f"--format {fmt} builds" in str(
        err.value
    )
    kept = ConvertConfig(model=tmp_path / "m", output_dir=tmp_path / "o", output_format="onnx", io_type="float32")
    assert kept.io_type.value == "float32"  # onnx honours --io-type (model or float32: its QDQ model keeps float I/O)
