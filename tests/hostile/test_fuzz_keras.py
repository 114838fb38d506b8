"""Property-based fuzzing of ``.keras`` archives: member names (nested, dotted, duplicated, absolute), declared and
real sizes, compression methods, and the content of config.json / metadata.json. Every archive must end in a
KerasArchive or one ModelError naming the file — never another exception, never a large allocation (the check
runs before any Keras loader); and through the real loader path (``prepare_source``: the check, then tf_keras /
Keras 3) only ModelError or a SavedModel. Derandomized and bounded as in test_fuzz_readers
(``EDGETOOL_FUZZ_EXAMPLES=N`` explores longer).
"""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_tool.convert.source import prepare_source
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.parsers.keras_archive import KerasArchive, check_keras_archive
from tests.builds import run_script
from tests.hostile.test_fuzz_readers import _EXPLORE, FUZZ, _mutate

PEAK_BYTES = 64 << 20
LOADER_FUZZ = settings(FUZZ, max_examples=_EXPLORE or 12)  # each example may start a Keras 3 child: slower

_K2_SCRIPT = """
import sys, tf_keras as keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
m.save(sys.argv[1])
"""


@pytest.fixture(scope="module")
def k2_members(tmp_path_factory) -> dict[str, bytes]:
    """The members of a real tf_keras .keras file (config.json, metadata.json, model.weights.h5)."""
    path = tmp_path_factory.mktemp("k2") / "m.keras"
    run_script(_K2_SCRIPT, path)
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


NAMES = st.one_of(
    st.sampled_from(
        [
            "config.json",
            "metadata.json",
            "model.weights.h5",
            "assets/",
            "assets/vocab.txt",
            "../config.json",
            "/config.json",
            "a/../../b",
            "a\\b",
            "./config.json",
            "a//b",
            "",
            "x" * 2000,
            "config.json/",
            "nested/deep/" * 20 + "w.h5",
            "\x00config.json",
            "café.json",
        ]
    ),
    st.text(min_size=0, max_size=40),
)
METHODS = st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _zip(members: list[tuple[str, bytes, int]], lies: dict[int, int]) -> bytes:
    """A zip of ``members`` (name, data, method); ``lies`` rewrites member i's declared size in both headers."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": duplicates are one of the fuzzed cases
        for name, data, method in members:
            info = zipfile.ZipInfo(name or "_", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            zf.writestr(info, data)
    out = bytearray(buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(out))) as zf:
        infos = zf.infolist()
    central = [i for i in range(len(out) - 4) if out[i : i + 4] == b"PK\x01\x02"]
    for index, size in lies.items():
        if index < len(infos) and index < len(central) and infos[index].file_size < (1 << 32) - 1:
            struct.pack_into("<I", out, infos[index].header_offset + 22, size)
            struct.pack_into("<I", out, central[index] + 24, size)
    return bytes(out)


def _only_typed(path: Path) -> KerasArchive | None:
    """check_keras_archive(path): a KerasArchive, or None after a ModelError naming the file (under PEAK_BYTES)."""
    tracemalloc.start()
    try:
        try:
            result = check_keras_archive(path)
        except ModelError as exc:
            assert str(path) in str(exc), str(exc)
            result = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"peak traced allocation {peak:,} bytes"
    return result


@st.composite
def archives(draw, k2: dict[str, bytes]) -> bytes:
    members = []
    for name, data in k2.items():
        if draw(st.booleans()) or name == "config.json":
            if name.endswith(".json") and draw(st.integers(0, 3)) == 0:
                data = json.dumps(draw(JSON_VALUES)).encode() if draw(st.booleans()) else draw(st.binary(max_size=64))
            members.append((name, data, draw(METHODS)))
    for _ in range(draw(st.integers(0, 3))):
        members.append((draw(NAMES), draw(st.binary(max_size=256)) * draw(st.integers(1, 64)), draw(METHODS)))
    members = draw(st.permutations(members))
    lies = draw(
        st.dictionaries(
            st.integers(0, max(len(members) - 1, 0)),
            st.sampled_from([0, 1, 1000, 10**6, 3 << 30, (1 << 32) - 2]),
            max_size=2,
        )
    )
    return _zip(list(members), lies)


def test_fuzzed_archives_give_a_typed_result(k2_members, tmp_path):
    path = tmp_path / "fuzz.keras"
    with zipfile.ZipFile(io.BytesIO(_zip([(n, d, zipfile.ZIP_STORED) for n, d in k2_members.items()], {}))) as zf:
        assert sorted(zf.namelist()) == sorted(k2_members)
    path.write_bytes(_zip([(n, d, zipfile.ZIP_STORED) for n, d in k2_members.items()], {}))
    assert isinstance(_only_typed(path), KerasArchive)  # the unfuzzed archive passes

    @FUZZ
    @given(data=archives(k2_members))
    def run(data):
        path.write_bytes(data)
        found = _only_typed(path)
        if found is not None:  # accepted: then its promises hold
            assert isinstance(found.config, dict) and len(set(found.members)) == len(found.members)
            assert not any(n.startswith("/") or ".." in n.split("/") for n in found.members)

    run()


def test_mutated_archive_bytes(k2_members, tmp_path):
    path = tmp_path / "mutated.keras"
    seed = _zip([(n, d, zipfile.ZIP_DEFLATED) for n, d in k2_members.items()], {})

    @FUZZ
    @given(data=st.data())
    def run(data):
        path.write_bytes(_mutate(data, seed))
        _only_typed(path)

    run()


@pytest.mark.slow
def test_fuzzed_archives_through_the_loader(k2_members, tmp_path):
    """The whole path convert and check take: the archive check, then tf_keras (and Keras 3 in a child):
    a SavedModel or one ModelError, nothing else."""
    import_tf()
    path = tmp_path / "loaded.keras"
    counter = iter(range(10**6))

    @LOADER_FUZZ
    @given(data=archives(k2_members))
    def run(data):
        path.write_bytes(data)
        work = tmp_path / f"work{next(counter)}"
        work.mkdir()
        try:
            prepare_source(path, work)
        except ModelError as exc:
            assert str(path) in str(exc) or "config" in str(exc), str(exc)

    run()
