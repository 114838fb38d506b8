"""Hostile data through the real CLI: calibration files (convert), eval data and labels (eval), label files (demo)
and broken SavedModels (inspect, convert, eval, demo). Each case: exit 2 (or the stated code), the message names
the offending file or value, no traceback, nothing changed outside the output (see harness.run_case).
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edge_tool.calibration.readers.tfrecord_file import masked_crc32c
from tests.builds import run_script
from tests.edgetool_runs import run_edgetool
from tests.hostile.harness import Case, run_case

_IMAGE_MODEL_SCRIPT = """
import sys, numpy as np, tensorflow as tf
class Img(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(64, 10)).astype("float32") / 255)
    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="image")])
    def serve(self, image):
        return {"probs": tf.nn.softmax(tf.matmul(tf.reshape(image, [-1, 64]), self.w))}
m = Img()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
"""

_FIVE_CLASS_SCRIPT = """
import sys, numpy as np, tensorflow as tf
class Five(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(4, 5)).astype("float32"))
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def serve(self, features):
        return {"scores": tf.nn.softmax(tf.matmul(features, self.w))}
m = Five()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
"""


@pytest.fixture(scope="session")
def models(flat_model, tmp_path_factory) -> dict[str, Path]:
    """The flat 3-class SavedModel and its fp32 .tflite, a 5-class .tflite, an 8x8x1 image SavedModel."""
    root = tmp_path_factory.mktemp("hostile-models")
    run_script(_IMAGE_MODEL_SCRIPT, root / "image")
    run_script(_FIVE_CLASS_SCRIPT, root / "five")
    for name, model in (("flat", flat_model), ("five", root / "five")):
        proc = run_edgetool("convert", model, "-o", root / f"{name}-tflite")
        assert proc.returncode == 0, proc.stderr[-2000:]
    (flat_tflite,), (five_tflite,) = (sorted((root / f"{n}-tflite").glob("*.tflite")) for n in ("flat", "five"))
    return {"FLAT": flat_model, "FLAT_TFLITE": flat_tflite, "FIVE_TFLITE": five_tflite, "IMAGE": root / "image"}


# --- builders: each writes the hostile input into the case's directory -----------------------------------------


def _npy_header(shape: tuple, descr: str = "<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _x(n: int = 16) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _example(features: list[float]) -> bytes:
    """A serialized tf.train.Example with one float_list feature "features" (protobuf encoded by hand)."""
    floats = _ld(2, _ld(1, struct.pack(f"<{len(features)}f", *features)))
    return _ld(1, _ld(1, _ld(1, b"features") + _ld(2, floats)))


def _frame(record: bytes) -> bytes:
    head = struct.pack("<Q", len(record))
    return head + struct.pack("<I", masked_crc32c(head)) + record + struct.pack("<I", masked_crc32c(record))


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height (8-bit grey) followed by a tiny IDAT: a decompression bomb header."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def write(name: str, data: bytes | str) -> Callable[[Path, dict], None]:
    def build(root: Path, models: dict) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    return build


def fifo(name: str) -> Callable[[Path, dict], None]:
    def build(root: Path, models: dict) -> None:
        os.mkfifo(root / name)

    return build


def npz(name: str, **arrays) -> Callable[[Path, dict], None]:
    def build(root: Path, models: dict) -> None:
        np.savez(root / name, **arrays)

    return build


def zip_members(name: str, members: dict[str, bytes]) -> Callable[[Path, dict], None]:
    def build(root: Path, models: dict) -> None:
        with zipfile.ZipFile(root / name, "w") as zf:
            for key, data in members.items():
                zf.writestr(key, data)

    return build


def zip_bomb(name: str) -> Callable[[Path, dict], None]:
    """An .npz whose 'x' is a valid 300 MB float32 array of zeros, deflated ~1000x (written streaming)."""
    rows = 300 * (1 << 20) // 16

    def build(root: Path, models: dict) -> None:
        with (
            zipfile.ZipFile(root / name, "w", zipfile.ZIP_DEFLATED) as zf,
            zf.open("x.npy", "w", force_zip64=True) as f,
        ):
            f.write(_npy_header((rows, 4)))
            zeros = bytes(1 << 20)
            for _ in range(rows * 16 // len(zeros)):
                f.write(zeros)

    return build


def image_folder(name: str, files: dict[str, bytes | tuple[int, int]]) -> Callable[[Path, dict], None]:
    """A folder of images: bytes are written as is, (w, h) becomes a real black greyscale PNG of that size."""

    def build(root: Path, models: dict) -> None:
        from PIL import Image

        for rel, content in files.items():
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, tuple):
                Image.new("L", content).save(path)
            else:
                path.write_bytes(content)

    return build


def broken_model(name: str, damage: Callable[[Path], None], source: str = "FLAT") -> Callable[[Path, dict], None]:
    def build(root: Path, models: dict) -> None:
        dst = root / name
        shutil.copytree(models[source], dst)
        damage(dst)

    return build


def _truncate(rel: str, size: int) -> Callable[[Path], None]:
    def damage(model: Path) -> None:
        with open(model / rel, "r+b") as f:
            f.truncate(size)

    return damage


def _flip(rel: str, at: int) -> Callable[[Path], None]:
    def damage(model: Path) -> None:
        data = bytearray((model / rel).read_bytes())
        data[at] ^= 0xFF
        (model / rel).write_bytes(bytes(data))

    return damage


def _replace(rel: str, data: bytes) -> Callable[[Path], None]:
    def damage(model: Path) -> None:
        (model / rel).write_bytes(data)

    return damage


def _empty(model: Path) -> None:
    shutil.rmtree(model)
    model.mkdir()


DATA = "variables/variables.data-00000-of-00001"
INDEX = "variables/variables.index"
CONVERT_INT8 = ("convert", "FLAT", "-o", "{root}/out", "-q", "int8", "--calibration")
CONVERT_IMAGE = ("convert", "IMAGE", "-o", "{root}/out", "-q", "int8", "--calibration")
EVAL = ("eval", "FLAT_TFLITE", "-r", "FLAT", "--data")
_TF_RECORDS = b"".join(_frame(_example([float(i), 1.0, 2.0, 3.0])) for i in range(6))

# (case, builder): the builder writes the hostile input into the case directory first.
CASES: list[tuple[Case, Callable[[Path, dict], None] | None]] = [
    # convert --calibration: CSV
    (
        Case("csv-not-utf8-body", (*CONVERT_INT8, "bad.csv"), names=("bad.csv", "not UTF-8", "line 3")),
        write("bad.csv", b"a,b,c,d\n1,2,3,4\n" + "\xe9,1,2,3\n".encode("latin-1")),
    ),
    (
        Case("csv-not-utf8-header", (*CONVERT_INT8, "bad.csv"), names=("bad.csv", "not UTF-8", "line 1")),
        write("bad.csv", "\xe9t\xe9,b,c,d\n1,2,3,4\n".encode("latin-1")),
    ),
    (
        Case("csv-field-over-128k", (*CONVERT_INT8, "big.csv"), names=("big.csv", "field limit")),
        write("big.csv", "a,b,c,d\n1,2,3," + "9" * 200_000 + "\n"),
    ),
    (
        Case("csv-ragged-rows", (*CONVERT_INT8, "ragged.csv"), names=("ragged.csv", "4 columns", "line 3")),
        write("ragged.csv", "a,b,c,d\n1,2,3,4\n1,2\n"),
    ),
    (
        Case("csv-non-numeric", (*CONVERT_INT8, "words.csv"), names=("words.csv", "non-numeric", "'seven'")),
        write("words.csv", "a,b,c,d\n1,2,3,4\n1,seven,3,4\n"),
    ),
    (Case("csv-empty", (*CONVERT_INT8, "empty.csv"), names=("empty.csv", "empty")), write("empty.csv", "")),
    (
        Case("csv-is-a-fifo", (*CONVERT_INT8, "pipe.csv"), names=("pipe.csv", "not a regular file"), timeout=120),
        fifo("pipe.csv"),
    ),
    # convert --calibration: .npy / .npz
    (
        Case(
            "npy-header-claims-1e12-rows", (*CONVERT_INT8, "huge.npy"), names=("huge.npy", "1000000000000", "truncated")
        ),
        write("huge.npy", _npy_header((10**12, 4)) + bytes(64)),
    ),
    (
        Case("npy-object-dtype", (*CONVERT_INT8, "obj.npy"), names=("obj.npy", "Python objects")),
        write("obj.npy", _npy_header((2, 4), "|O") + bytes(64)),
    ),
    (
        Case("npy-garbage-header", (*CONVERT_INT8, "junk.npy"), names=("junk.npy", "cannot read")),
        write("junk.npy", b"\x93NUMPY\x01\x00\x20\x00{'descr': <f4, 'shape': (((\n" + bytes(20)),
    ),
    (
        Case("npz-x-claims-1e12-rows", (*CONVERT_INT8, "huge.npz"), names=("huge.npz", "'x'", "1000000000000")),
        zip_members("huge.npz", {"x.npy": _npy_header((10**12, 4)) + bytes(64)}),
    ),
    (
        Case("npz-y-claims-1e10-labels", (*CONVERT_INT8, "hugey.npz"), names=("hugey.npz", "'y'", "10000000000")),
        zip_members(
            "hugey.npz", {"x.npy": _npy_header((2, 4)) + bytes(32), "y.npy": _npy_header((10**10,), "<i8") + bytes(16)}
        ),
    ),
    (
        Case("npz-object-array", (*CONVERT_INT8, "obj.npz"), names=("obj.npz", "Python objects")),
        npz("obj.npz", x=np.array([[1, 2, 3, 4]], dtype=object)),
    ),
    (
        Case("npz-string-array", (*CONVERT_INT8, "text.npz"), names=("text.npz", "non-numeric")),
        npz("text.npz", x=np.array([["a", "b", "c", "d"]] * 3)),
    ),
    (
        Case("npz-corrupt-zip", (*CONVERT_INT8, "cut.npz"), names=("cut.npz", "npz archive")),
        write("cut.npz", b"PK\x03\x04" + bytes(40)),
    ),
    (Case("npz-zip-bomb", (*CONVERT_INT8, "bomb.npz"), names=("bomb.npz", "zip bomb")), zip_bomb("bomb.npz")),
    # convert --calibration: TFRecord
    (
        Case(
            "tfrecord-not-examples",
            (*CONVERT_INT8, "junk.tfrecord"),
            names=("junk.tfrecord", "record 0", "tf.train.Example"),
        ),
        write("junk.tfrecord", b"".join(_frame(b"\xff\xff\xff not a proto") for _ in range(3))),
    ),
    (
        Case(
            "tfrecord-truncated-mid-record",
            (*CONVERT_INT8, "cut.tfrecord"),
            names=("cut.tfrecord", "truncated", "record 3"),
        ),
        write("cut.tfrecord", _TF_RECORDS[: len(_TF_RECORDS) // 2 + 7]),
    ),
    (
        Case("tfrecord-bad-data-crc", (*CONVERT_INT8, "crc.tfrecord"), names=("crc.tfrecord", "record 0")),
        write("crc.tfrecord", _TF_RECORDS[:14] + bytes([_TF_RECORDS[14] ^ 0xFF]) + _TF_RECORDS[15:]),
    ),
    (
        Case("tfrecord-random-bytes", (*CONVERT_INT8, "noise.tfrecord"), names=("noise.tfrecord", "not a TFRecord")),
        write("noise.tfrecord", bytes(range(256)) * 4),
    ),
    # convert --calibration: image folders
    (
        Case("image-20000x20000-bomb", (*CONVERT_IMAGE, "imgs"), names=("huge.png", "400,000,000 pixels", "limit")),
        image_folder("imgs", {"a/huge.png": _png_header_only(20000, 20000), "b/ok.png": (8, 8)}),
    ),
    (
        Case("image-12000x9000-over-limit", (*CONVERT_IMAGE, "imgs"), names=("wide.png", "12000x9000")),
        image_folder("imgs", {"a/wide.png": _png_header_only(12000, 9000), "b/ok.png": (8, 8)}),
    ),
    # the folder's 2 classes cannot measure the 10-class model's input scaling, so the range is given
    (
        Case(
            "image-10000x10000-no-pil-warning",
            (*CONVERT_IMAGE, "imgs", "--input-range", "0..255"),
            exit_code=0,
            may_create=("out",),
            absent=("DecompressionBomb", "decompression bomb"),
        ),
        image_folder("imgs", {"a/big.png": (10000, 10000), "b/ok.png": (8, 8)}),
    ),
    (
        Case("image-garbage-png", (*CONVERT_IMAGE, "imgs"), names=("x.png", "cannot decode")),
        image_folder("imgs", {"a/x.png": b"\x89PNG\r\n\x1a\n" + bytes(100), "b/ok.png": (8, 8)}),
    ),
    # eval --data and labels
    (
        Case(
            "eval-labels-above-classes",
            (*EVAL, "labels.npz", "--max-drop", "0.5"),
            names=("labels.npz", "range 0..6", "3 classes"),
        ),
        npz("labels.npz", x=_x(), y=np.arange(16) % 7),
    ),
    (
        Case("eval-negative-labels", (*EVAL, "labels.npz"), names=("labels.npz", "range -2..0", "3 classes")),
        npz("labels.npz", x=_x(), y=-(np.arange(16) % 3)),
    ),
    (
        Case(
            "eval-fractional-labels",
            (*EVAL, "labels.npz"),
            names=("labels.npz", "non-integer values", "class indices 0..2"),
        ),
        npz("labels.npz", x=_x(), y=np.arange(16) % 3 + 0.5),
    ),
    (
        Case("eval-nan-labels", (*EVAL, "labels.npz"), names=("labels.npz", "non-integer values")),
        npz("labels.npz", x=_x(), y=np.full(16, np.nan)),
    ),
    (
        Case(
            "eval-5-class-artefact-vs-3-class-reference",
            ("eval", "FIVE_TFLITE", "-r", "FLAT", "--data", "d.npz"),
            names=("five_fp32.tflite", "(any, 5)", "(any, 3)"),
        ),
        npz("d.npz", x=_x(), y=np.arange(16) % 3),
    ),
    (
        Case("eval-data-not-utf8-csv", (*EVAL, "bad.csv"), names=("bad.csv", "not UTF-8")),
        write("bad.csv", "a,b,c,d\n1,2,3,\xff\n".encode("latin-1")),
    ),
    (
        Case("eval-data-truncated-tfrecord", (*EVAL, "cut.tfrecord"), names=("cut.tfrecord", "truncated")),
        write("cut.tfrecord", _TF_RECORDS[:-3]),
    ),
    (
        Case("eval-data-npy-lies", (*EVAL, "huge.npy"), names=("huge.npy", "truncated")),
        write("huge.npy", _npy_header((10**12, 4)) + bytes(64)),
    ),
    (
        Case(
            "eval-data-symlink-to-dev-zero", (*EVAL, "zero.npy"), names=("zero.npy", "not a regular file"), timeout=120
        ),
        lambda root, models: (root / "zero.npy").symlink_to("/dev/zero"),
    ),
    # demo --labels
    (
        Case(
            "demo-labels-not-utf8",
            ("demo", "FLAT", "-o", "{root}/site", "--labels", "labels.txt"),
            names=("labels.txt", "not UTF-8"),
        ),
        write("labels.txt", "caf\xe9\nb\nc\n".encode("latin-1")),
    ),
    (
        Case(
            "demo-labels-empty",
            ("demo", "FLAT", "-o", "{root}/site", "--labels", "labels.txt"),
            names=("labels.txt", "no labels"),
        ),
        write("labels.txt", "\n \n"),
    ),
    (
        Case(
            "demo-labels-too-many",
            ("demo", "FLAT", "-o", "{root}/site", "--labels", "labels.txt"),
            names=("labels.txt", "5 labels", "3 classes"),
        ),
        write("labels.txt", "a\nb\nc\nd\ne\n"),
    ),
    (
        Case(
            "demo-labels-absurdly-large",
            ("demo", "FLAT", "-o", "{root}/site", "--labels", "labels.txt"),
            names=("labels.txt", "bytes"),
        ),
        write("labels.txt", ("x" * 99 + "\n") * 30_000),
    ),
    # broken SavedModels
    (
        Case(
            "inspect-truncated-variables-data", ("inspect", "m"), names=("variables.data-00000-of-00001", "truncated")
        ),
        broken_model("m", _truncate(DATA, 20)),
    ),
    (
        Case(
            "convert-truncated-variables-data",
            ("convert", "m", "-o", "{root}/out"),
            names=("variables.data-00000-of-00001", "truncated"),
            absent=("RestoreV2",),
        ),
        broken_model("m", _truncate(DATA, 20)),
    ),
    (
        Case(
            "eval-reference-truncated-variables",
            ("eval", "FLAT_TFLITE", "-r", "m", "--data", "m/eval.npz"),
            names=("variables.data-00000-of-00001", "truncated"),
        ),
        broken_model("m", _truncate(DATA, 20)),
    ),
    (
        Case(
            "demo-truncated-variables",
            ("demo", "m", "-o", "{root}/site"),
            names=("variables.data-00000-of-00001", "truncated"),
        ),
        broken_model("m", _truncate(DATA, 20)),
    ),
    (
        Case(
            "convert-truncated-variables-index",
            ("convert", "m", "-o", "{root}/out"),
            names=("variables.index", "unreadable"),
        ),
        broken_model("m", _truncate(INDEX, 30)),
    ),
    (
        Case(
            "convert-bit-flipped-variables",
            ("convert", "m", "-o", "{root}/out"),
            names=("variables.data-00000-of-00001", "Checksum"),
        ),
        broken_model("m", _flip(DATA, 5)),
    ),
    (
        Case("inspect-missing-variables-data", ("inspect", "m"), names=("variables.data-00000-of-00001", "missing")),
        broken_model("m", lambda m: (m / DATA).unlink()),
    ),
    (
        Case("inspect-garbage-saved-model-pb", ("inspect", "m"), names=("saved_model.pb", "not a readable")),
        broken_model("m", _replace("saved_model.pb", bytes(range(256)) * 2)),
    ),
    (
        Case("convert-empty-model-dir", ("convert", "m", "-o", "{root}/out"), names=("saved_model.pb",)),
        broken_model("m", _empty),
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("case,build", CASES, ids=[c.name for c, _ in CASES])
def test_hostile_data(case: Case, build, models, tmp_path):
    root = tmp_path / "case"
    root.mkdir()
    if build is not None:
        build(root, models)
    args = tuple(str(models[a]) if a in models else a for a in case.args)
    run_case(replace(case, args=args), root)


def test_case_table_is_large_and_unique():
    names = [c.name for c, _ in CASES]
    assert len(names) >= 25 and len(set(names)) == len(names)
