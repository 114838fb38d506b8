"""Eval's format recognition is the registry of ``models.readers``: by name/layout, then by content where the name
does not bind; ``ArtifactFormat`` and the messages derive from it (the parsing of each format is pinned beside its
runtime: tests/test_eval.py, tests/test_eval_onnx.py)."""

from __future__ import annotations

import pytest

from edge_tool.convert.formats import FORMATS
from edge_tool.errors import ModelError
from edge_tool.models.readers import READERS, ArtifactFormat, recognise

TFLITE_HEAD = b"\x1c\x00\x00\x00TFL3" + bytes(24)  # root offset, then the flatbuffer file identifier
ONNX_HEAD = b"\x08\x08\x12\x07tf2onnx" + bytes(8)  # field 1 (ir_version) varint: how every ModelProto starts


def _name(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return recognise(path)


def test_every_reader_is_a_convert_format_and_the_enum_is_derived():
    assert set(READERS) <= set(FORMATS)
    assert [f.value for f in ArtifactFormat] == list(READERS)


@pytest.mark.parametrize(
    "name, data, want",
    [
        ("m.tflite", TFLITE_HEAD, "tflite"),
        ("m.tflite", ONNX_HEAD, "onnx"),  # a .tflite name does not bind: ONNX bytes are read as ONNX
        ("m.bin", ONNX_HEAD, "onnx"),
        ("m.onnx", TFLITE_HEAD, "onnx"),  # an .onnx name binds: its reader refuses the flatbuffer, naming it
        ("m.bin", b"garbage!", "tflite"),  # nothing recognises it: the fallback reader's parser says what it is
        ("m.bin", b"", "tflite"),
    ],
)
def test_a_file_is_recognised_by_name_then_content(tmp_path, name, data, want):
    reader, model_file = _name(tmp_path, name, data)
    assert (reader.name, model_file) == (want, tmp_path / name)


def test_directories_by_layout(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "m.tflite").write_bytes(TFLITE_HEAD)
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "model.json").write_text("{}")
    (tmp_path / "web" / "m.tflite").write_bytes(TFLITE_HEAD)  # model.json decides the layout
    assert recognise(tmp_path / "one")[0].name == "tflite"
    assert recognise(tmp_path / "web") == (READERS["tfjs"], tmp_path / "web" / "model.json")
    (tmp_path / "one" / "n.tflite").write_bytes(TFLITE_HEAD)
    with pytest.raises(ModelError, match="none of a directory with exactly one .tflite file or a TFJS model"):
        recognise(tmp_path / "one")


def test_a_missing_path_names_every_format(tmp_path):
    with pytest.raises(ModelError, match=r"expected a \.tflite file, a TFJS model directory or an \.onnx file"):
        recognise(tmp_path / "nothing.tflite")
