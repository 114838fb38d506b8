"""Property-based fuzzing of every calibration reader: random bytes and mutated valid files (.npz, .npy, CSV,
TFRecord, image folders) must end in a CalibrationError (exit 2 at the CLI) or load cleanly — never another
exception, never a large allocation.

Readers are called in-process (fast). Examples are derandomized with a bounded count so CI is reproducible;
``EDGETOOL_FUZZ_EXAMPLES=5000`` runs a longer, random exploration locally.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_tool.calibration import CalibrationError, InputSpec, LoadOptions, load
from edge_tool.calibration.readers.tfrecord_file import masked_crc32c
from edge_tool.core.env import import_tf

_EXPLORE = int(os.environ.get("EDGETOOL_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=_EXPLORE or 80,
    deadline=None,
    database=None,
    derandomize=not _EXPLORE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
IMAGE_FUZZ = settings(FUZZ, max_examples=_EXPLORE or 30)  # a mutated header may declare up to MAX_PIXELS: slower
PEAK_BYTES = 64 << 20  # a few-KB input may not make a reader allocate more than this (header-declared sizes)

FLAT = [InputSpec("features", "float32", (None, 4))]
IMAGE = [InputSpec("image", "float32", (None, 8, 8, 1))]


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _npz(compressed: bool) -> bytes:
    buf = io.BytesIO()
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    (np.savez_compressed if compressed else np.savez)(buf, x=x, y=np.arange(6) % 3)
    return buf.getvalue()


def _csv() -> bytes:
    rows = ["a,b,c,d,label"] + [f"{i},{i + 1}.5,{-i},{i * 2},{'cat' if i % 2 else 'dog'}" for i in range(6)]
    return ("\n".join(rows) + "\n").encode()


def _frame(record: bytes) -> bytes:
    head = struct.pack("<Q", len(record))
    return head + struct.pack("<I", masked_crc32c(head)) + record + struct.pack("<I", masked_crc32c(record))


def _tfrecord() -> bytes:
    tf = import_tf()
    out = b""
    for i in range(4):
        feats = {
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=np.arange(64, dtype=np.float32) + i)),
            "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
        }
        out += _frame(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    return out


def _image(fmt: str) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray((np.arange(64, dtype=np.uint8) * 4).reshape(8, 8)).save(buf, format=fmt)
    return buf.getvalue()


def _mutate(data: st.DataObject, seed: bytes) -> bytes:
    """Flip, overwrite, insert, delete or truncate bytes of ``seed`` (1 to 4 edits)."""
    out = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = data.draw(st.integers(0, max(0, len(out) - 1)))
        if op == "flip" and out:
            out[pos] ^= data.draw(st.integers(1, 255))
        elif op == "set" and out:
            chunk = data.draw(st.binary(min_size=1, max_size=8))
            out[pos : pos + len(chunk)] = chunk
        elif op == "insert":
            out[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del out[pos : pos + data.draw(st.integers(1, 32))]
        elif op == "truncate":
            del out[pos:]
    return bytes(out)


def _load_only_typed_errors(path: Path, specs, label_key: str | None = None) -> None:
    """Load ``path`` twice (everything; a seeded sample of 3); only CalibrationError may escape, and the
    traced peak allocation stays under PEAK_BYTES."""
    tracemalloc.start()
    try:
        for samples in (None, 3):
            try:
                load(path, specs, LoadOptions(samples=samples, label_key=label_key))
            except CalibrationError as exc:
                assert str(exc).strip(), "empty error message"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"{path.name}: peak traced allocation {peak:,} bytes"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def tf_imported():
    """TensorFlow imported before any traced load (its import would count as the reader's allocation)."""
    return import_tf()


SEEDS = {
    "npy": lambda: _npy(np.arange(24, dtype=np.float32).reshape(6, 4)),
    "npy-fortran": lambda: _npy(np.asfortranarray(np.arange(24, dtype=np.float32).reshape(6, 4))),
    "npz": lambda: _npz(False),
    "npz-deflate": lambda: _npz(True),
    "csv": _csv,
}
SUFFIX = {"npy": ".npy", "npy-fortran": ".npy", "npz": ".npz", "npz-deflate": ".npz", "csv": ".csv"}


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_mutated_array_and_csv_files(kind, workdir):
    seed = SEEDS[kind]()
    path = workdir / f"mutated{SUFFIX[kind]}"
    label_key = "label" if kind == "csv" else None

    @FUZZ
    @given(data=st.data())
    def run(data):
        path.write_bytes(_mutate(data, seed))
        _load_only_typed_errors(path, FLAT, label_key)

    run()


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".csv", ".tfrecord"])
def test_random_bytes(suffix, workdir, tf_imported):
    path = workdir / f"random{suffix}"
    magic = {".npy": b"\x93NUMPY", ".npz": b"PK\x03\x04", ".csv": b"", ".tfrecord": b""}[suffix]

    @FUZZ
    @given(body=st.binary(max_size=512), with_magic=st.booleans())
    def run(body, with_magic):
        path.write_bytes((magic if with_magic else b"") + body)
        _load_only_typed_errors(path, IMAGE if suffix == ".tfrecord" else FLAT)

    run()


def test_npy_headers_with_any_shape_and_dtype(workdir):
    """Well-formed headers that lie: any shape (up to 10^13 rows), any dtype, either order, little data."""
    path = workdir / "lying.npy"
    dtypes = st.sampled_from(["<f4", "<f8", "|u1", "<i8", "|b1", "<c8", "<U3", "|S0", "|V4", "|O", "<M8[s]"])

    @FUZZ
    @given(
        shape=st.lists(st.integers(-2, 10**13), max_size=4),
        descr=dtypes,
        fortran=st.booleans(),
        data_len=st.integers(0, 256),
    )
    def run(shape, descr, fortran, data_len):
        buf = io.BytesIO()
        header = {"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}
        np.lib.format.write_array_header_1_0(buf, header)
        path.write_bytes(buf.getvalue() + bytes(data_len))
        _load_only_typed_errors(path, FLAT)

    run()


def test_npz_members_with_lying_sizes(workdir):
    """Zip directory entries whose declared sizes disagree with the data: bombs, truncation, huge labels."""
    path = workdir / "lying.npz"

    @FUZZ
    @given(
        rows=st.integers(0, 10**12),
        label_rows=st.integers(0, 10**11),
        compress=st.booleans(),
        data_len=st.integers(0, 128),
    )
    def run(rows, label_rows, compress, data_len):
        method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        with zipfile.ZipFile(path, "w", method) as zf:
            for key, shape, descr in (("x", (rows, 4), "<f4"), ("y", (label_rows,), "<i8")):
                buf = io.BytesIO()
                np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
                zf.writestr(f"{key}.npy", buf.getvalue() + bytes(data_len))
        _load_only_typed_errors(path, FLAT)

    run()


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_mutated_tfrecord(gz, workdir, tf_imported):
    seed = _tfrecord()
    seed = gzip.compress(seed) if gz else seed
    path = workdir / "mutated.tfrecord"
    load(_write(path, seed), IMAGE, LoadOptions(samples=None, label_key="y"))  # the seed itself is valid

    @FUZZ
    @given(data=st.data())
    def run(data):
        path.write_bytes(_mutate(data, seed))
        _load_only_typed_errors(path, IMAGE, "y")

    run()


def test_tfrecord_of_arbitrary_records(workdir, tf_imported):
    """Valid framing (CRCs right) around arbitrary record bytes: not-Examples, odd features, empty records."""
    path = workdir / "records.tfrecord"

    @FUZZ
    @given(records=st.lists(st.binary(max_size=200), max_size=5))
    def run(records):
        path.write_bytes(b"".join(_frame(r) for r in records))
        _load_only_typed_errors(path, IMAGE, "y")

    run()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "BMP"])
def test_mutated_images_in_a_folder(fmt, workdir):
    seed = _image(fmt)
    folder = workdir / f"images-{fmt}"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    _write(folder / "b" / f"ok.{fmt.lower()}", seed)
    target = folder / "a" / f"x.{fmt.lower()}"

    @IMAGE_FUZZ
    @given(data=st.data())
    def run(data):
        target.write_bytes(_mutate(data, seed))
        _load_only_typed_errors(folder, IMAGE)

    run()


def test_random_bytes_as_images(workdir):
    folder = workdir / "images-random"
    folder.mkdir()
    target = folder / "x.png"

    @FUZZ
    @given(
        body=st.binary(max_size=512),
        magic=st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF89a", b"BM"]),
    )
    def run(body, magic):
        target.write_bytes(magic + body)
        _load_only_typed_errors(folder, IMAGE)

    run()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
