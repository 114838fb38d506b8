"""The one serializer (calibration.serial): field metadata drives every JSON form; every artefact/result dataclass
round-trips (from_dict(to_dict(x)) == x) on generated instances; no class writes its JSON by hand any more."""

from __future__ import annotations

import ast
import dataclasses
import enum
import json
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_tool.auto import Candidate, Decision
from edge_tool.calibration import serial
from edge_tool.calibration.contract import ImageContract
from edge_tool.calibration.dataset import CalibrationSummary, InputStats
from edge_tool.calibration.serial import Record, SerialError, spec
from edge_tool.calibration.spec import TensorSpec
from edge_tool.check.base import Finding, Status, TargetResult, Verdict
from edge_tool.check.run import CheckReport
from edge_tool.evaluate.report import Report
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, LayerError, ReferenceResult
from edge_tool.metadata.reader import EmbeddedMetadata, TensorInfo
from edge_tool.models.signatures import SignatureInfo
from edge_tool.parsers.tflite_model import TfliteSummary
from edge_tool.schemas import format_records, records
from edge_tool.schemas.manifest import CalibrationRecord, Manifest, ManifestArtifact

REPO = Path(__file__).resolve().parents[1]


class Colour(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner(Record):
    a: int
    b: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outer(Record):
    json_order = ("second",)

    first: str = field(metadata=spec("one"))
    second: Colour
    inner: Inner | None = field(default=None, metadata=spec(omit="none"))
    note: str = field(default="", metadata=spec(omit="empty"))
    extra: int | None = field(default=None, metadata=spec(when=lambda o: o.inner is not None))
    path: Path | None = None
    flat: Inner = field(default=Inner(0), metadata=spec(flatten=True))
    derived: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", len(self.first))


def test_metadata_renames_orders_omits_and_flattens():
    o = Outer("xy", Colour.RED, path=Path("d/f"))
    assert json.dumps(o.to_dict()) == ('{"second": "red", "one": "xy", "path": "d/f", "a": 0, "b": [], "derived": 2}')
    full = Outer("x", Colour.BLUE, Inner(3, ("p",)), "n", 7, None, Inner(1, ("q",)))
    assert full.to_dict() == {
        "second": "blue",
        "one": "x",
        "inner": {"a": 3, "b": ["p"]},
        "note": "n",
        "extra": 7,
        "path": None,
        "a": 1,
        "b": ["q"],
        "derived": 1,
    }
    for obj in (o, full):
        assert Outer.from_dict(obj.to_dict()) == obj


def test_unknown_keys_are_ignored_unless_strict():
    doc = {"second": "red", "one": "x", "a": 0, "later_version_key": 1}
    assert Outer.from_dict(doc) == Outer("x", Colour.RED)
    with pytest.raises(SerialError, match="Outer has no key 'later_version_key'"):
        serial.from_dict(Outer, doc, strict=True)


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"one": "x", "a": 0}, "at $: missing key 'second'"),
        ({"one": 3, "second": "red", "a": 0}, "at $.one: expected string, found integer 3"),
        ({"one": "x", "second": "green", "a": 0}, "at $.second: expected one of 'red', 'blue', found string 'green'"),
        ({"one": "x", "second": "red", "a": 0, "inner": {"a": True}}, "at $.inner.a: expected integer, found boolean"),
        ({"one": "x", "second": "red", "a": 0, "inner": {"a": 1, "b": "p"}}, "at $.inner.b: expected an array"),
        ({"one": "x", "second": "red", "a": 0, "inner": []}, "at $.inner: expected an object, found array"),
    ],
)
def test_wrong_shapes_name_the_place(doc, message):
    with pytest.raises(SerialError) as exc:
        Outer.from_dict(doc)
    assert str(exc.value).startswith(message)


def test_a_record_refusing_itself_is_a_serial_error_naming_the_place():
    bad = {
        "input": "x",
        "layout": "NHWC",
        "height": 8,
        "width": 8,
        "channels": 3,
        "channel_order": "RGB",
        "mean": [0.0],
        "std": [0.0],
    }
    with pytest.raises(SerialError) as exc:
        serial.from_dict(ImageContract, bad, "$.input_contract[0]")
    assert str(exc.value) == (
        "at $.input_contract[0]: invalid input contract for 'x': std must not contain 0, got [0.0, 0.0, 0.0]"
    )


def test_non_finite_self_check_error_is_written_as_null():
    bad = records.SelfCheck(4, math.inf, 1e-3, False)
    assert bad.to_dict() == {
        "inputs": "seeded random",
        "samples": 4,
        "max_abs_error": None,
        "tolerance": 1e-3,
        "ok": False,
    }
    assert records.SelfCheck.from_dict(bad.to_dict()) == bad


def test_latency_samples_are_read_from_a_worker_and_never_written():
    stats = LatencyStats.from_dict(
        {
            "p50": 1.0,
            "p90": 2.0,
            "p99": 3.0,
            "mean": 1.5,
            "std": 0.1,
            "cold_start": None,
            "runs": 3,
            "samples": [1.0, 1.5, 2.0],
        }
    )
    assert stats.samples_ms == (1.0, 1.5, 2.0) and "samples" not in stats.to_dict()


# --- generated instances of every artefact/result dataclass -----------------------------------------------------

_text = st.text(max_size=6)
_floats = st.floats(allow_nan=False, allow_infinity=False, width=32)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-9, 9) | _floats | _text,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_text, inner, max_size=2),
    max_leaves=4,
)


def _image_contract():
    def make(layout, height, width, order, mean, std, resize, source, evidence, name):
        channels = 1 if order == "L" else 3
        return ImageContract(
            name,
            layout,
            height,
            width,
            channels,
            order,
            tuple(mean[:channels]),
            tuple(std[:channels]),
            resize,
            source,
            evidence,
        )

    positive = st.floats(0.5, 300, allow_nan=False)
    return st.builds(
        make,
        st.sampled_from(["NHWC", "NCHW", "NHW"]),
        st.none() | st.integers(1, 64),
        st.none() | st.integers(1, 64),
        st.sampled_from(["RGB", "BGR", "L"]),
        st.lists(_floats, min_size=3, max_size=3),
        st.lists(positive, min_size=3, max_size=3),
        st.sampled_from(["bilinear", "nearest", "area"]),
        st.sampled_from(["model", "metadata", "probe", "option", "default"]),
        _text,
        _text,
    )


def _manifest_artifact():
    common = {"path": _text, "quant": _text, "size_bytes": st.integers(0, 10**9), "seconds": _floats}
    optional = {
        name: st.none() | strategy(hint)
        for name, hint in (
            ("self_check", records.SelfCheck),
            ("int16x8", records.Int16x8Note),
            ("micro", records.MicroRecord),
            ("fixed_batch", records.BatchNote),
        )
    }
    tflite = st.fixed_dictionaries(
        {
            **common,
            "format": st.just("tflite"),
            "sha256": _text,
            "tensors": strategy(TfliteSummary),
            "state_warning": st.none() | _text,
            "metadata": st.none() | strategy(records.MetadataRecord),
            "qat": st.none() | st.dictionaries(_text, _json, max_size=2),
            **optional,
        }
    )
    tfjs = st.fixed_dictionaries(
        {**common, "format": st.just("tfjs"), "files": st.dictionaries(_text, strategy(records.FileEntry), max_size=2)}
    )
    return (tflite | tfjs).map(lambda kw: ManifestArtifact(**kw))


def _artifact_result():
    def make(base: ArtifactResult, failed, metrics, drift, drop, arena, flash):
        measured = metrics is not None or drift is not None
        return dataclasses.replace(
            base,
            failed=failed,
            metrics=metrics,
            drift=drift,
            metric_drop=drop if measured else None,
            arena=arena,
            flash_bytes=flash if arena is not None else None,
        )

    maybe_dict = st.none() | st.dictionaries(_text, _json, max_size=2)
    return st.builds(
        make,
        _generic(ArtifactResult),
        st.none() | st.text(min_size=1, max_size=6),
        maybe_dict,
        maybe_dict,
        st.none() | _floats,
        maybe_dict,
        st.none() | st.integers(0, 99),
    )


def _candidate():
    def make(base: Candidate, name):
        path = None if name is None else Path(name) if base.chosen else Path("candidates") / name
        return dataclasses.replace(base, path=path)

    return st.builds(make, _generic(Candidate), st.none() | st.sampled_from(["m_int8.tflite", "x.tflite"]))


_SPECIAL = {
    ImageContract: _image_contract,
    TensorSpec: lambda: st.builds(
        TensorSpec,
        _text,
        st.sampled_from(["float32", "int8", "uint8", "string"]),
        st.none() | st.lists(st.none() | st.integers(0, 99), max_size=4).map(tuple),
    ),
    ManifestArtifact: _manifest_artifact,
    ArtifactResult: _artifact_result,
    Candidate: _candidate,
    Decision: lambda: st.builds(
        lambda d, task, metric: dataclasses.replace(d, task=task, metric=metric if task else None),
        _generic(Decision),
        st.none() | _text,
        st.none() | _text,
    ),
    records.SelfCheck: lambda: st.builds(
        records.SelfCheck, st.integers(1, 9), _floats.map(abs) | st.just(math.inf), _floats, st.booleans()
    ),
}


def _generic(cls):
    """Instances of dataclass ``cls`` with every init field drawn from its type."""
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{f.name: strategy(hints[f.name]) for f in dataclasses.fields(cls) if f.init})


def strategy(hint):
    """Values of type ``hint`` (as the serializer reads them)."""
    if hint in _SPECIAL:
        return st.deferred(_SPECIAL[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        return st.one_of(*(st.none() if a is type(None) else strategy(a) for a in args))
    if dataclasses.is_dataclass(hint):
        return st.deferred(lambda: _generic(hint))
    if origin is tuple or hint is tuple:
        item = strategy(args[0]) if args else _text
        return st.lists(item, max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(_text, strategy(args[1]), max_size=2)
    if hint is dict:
        return st.dictionaries(_text, _json, max_size=2)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    return {str: _text, int: st.integers(-(10**6), 10**6), float: _floats, bool: st.booleans(), Path: _text.map(Path)}[
        hint
    ]


# Every dataclass with a published JSON form, and the records inside them.
ROUND_TRIPPED = [
    Manifest,
    ManifestArtifact,
    records.ToolInfo,
    records.SourceRecord,
    records.FixedBatch,
    CalibrationRecord,
    format_records.OnnxAgreement,
    format_records.TfjsAgreement,
    format_records.OnnxQuantization,
    records.FileEntry,
    records.MetadataRecord,
    records.SelfCheck,
    records.Int16x8Note,
    records.BatchNote,
    records.MicroRecord,
    records.ArenaSize,
    TfliteSummary,
    SignatureInfo,
    TensorSpec,
    CalibrationSummary,
    InputStats,
    ImageContract,
    Report,
    ArtifactResult,
    ReferenceResult,
    LatencyStats,
    LayerError,
    Decision,
    Candidate,
    CheckReport,
    TargetResult,
    Finding,
    EmbeddedMetadata,
    TensorInfo,
]


@pytest.mark.parametrize("cls", ROUND_TRIPPED, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_from_dict_of_to_dict_is_the_same_object(cls, data):
    obj = data.draw(strategy(cls))
    doc = json.loads(json.dumps(obj.to_dict()))  # through JSON text, as the files are
    back = serial.from_dict(cls, doc)
    assert back == obj
    assert back.to_dict() == doc


def test_check_report_failed_is_derived():
    found = TargetResult("tflm", "m", Verdict.FAILS, (Finding("X", Status.UNSUPPORTED, "no"),), "probe")
    report = CheckReport("m", "saved_model", (found,))
    assert report.to_dict()["failed"] == ["tflm"] and report.to_dict()["schema"] == "edgetool.check/1"


# --- no JSON form written by hand ---------------------------------------------------------------------------------

# (file, class) -> why it still has its own method
ALLOWED = {
    ("calibration/serial.py", "Record"): "the serializer's own entry points",
    ("edge_tool/schemas/document.py", "Document"): "validates against the published schema, then the serializer",
    ("edge_tool/tasks/base.py", "TaskChoice"): "combines the choice with the Task's attributes (not a "
    "field mapping); pipeline.py belongs to ort-runtime",
    ("edge_tool/evaluate/data.py", "RunningStats"): "a running accumulator, not a dataclass: computes the stats",
    ("edge_tool/device/probe.py", "DeviceProbe"): "merges the device's facts and derived readiness "
    "(device belongs to the device lane)",
}


def _hand_written() -> set[tuple[str, str]]:
    found = set()
    for pkg in ("edge_tool", "calibration"):
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef) and item.name in ("to_dict", "from_dict"):
                            found.add((str(path.relative_to(REPO)), node.name))
    return found


def test_no_hand_written_to_dict_or_from_dict_outside_the_allow_list():
    found = _hand_written()
    assert found - set(ALLOWED) == set(), "write the JSON form with field metadata (calibration.serial) instead"
    assert set(ALLOWED) - found == set(), "an allow-list entry no longer needed: remove it"
