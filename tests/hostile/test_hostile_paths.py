"""Paths read from files stay inside their directory: TFJS model.json shard paths in demo and eval.

Every hostile model.json (dot-dot, absolute, symlinked dir or file, percent-encoded, NUL, overlong, backslash,
non-string, malformed manifest, model.json itself a symlink out) is refused with exit 2 naming the path, and
nothing is written or copied (the harness compares the case dir and a private TMPDIR before/after).
A Hypothesis property pins ``fsutil.resolve_inside`` itself: random relative paths over a tree of symlinks never
resolve outside the base.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_tool.core.fsutil import resolve_inside
from edge_tool.errors import ModelError
from tests.hostile.core_fixtures import case_root, flat_artifacts  # noqa: F401 (fixtures)
from tests.hostile.harness import Case, run_case

SHARD = "group1-shard1of1.bin"


def _set_manifest(root: Path, manifest) -> None:
    doc_path = root / "tfjs" / "model.json"
    doc = json.loads(doc_path.read_text())
    doc["weightsManifest"] = manifest
    doc_path.write_text(json.dumps(doc))


def _paths(*paths) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        doc = json.loads((root / "tfjs" / "model.json").read_text())
        weights = doc["weightsManifest"][0]["weights"]
        _set_manifest(root, [{"paths": list(paths), "weights": weights}])

    return setup


def _then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for s in steps:
            s(root)

    return setup


def _symlink(rel: str, target: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        os.symlink(target, root / "tfjs" / rel)

    return setup


def _mkdir(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / "tfjs" / rel).mkdir(parents=True)


def _model_json_outside(root: Path) -> None:
    (root / "elsewhere").mkdir()
    os.replace(root / "tfjs" / "model.json", root / "elsewhere" / "model.json")
    os.replace(root / "tfjs" / SHARD, root / "elsewhere" / SHARD)
    os.symlink("../elsewhere/model.json", root / "tfjs" / "model.json")


# name -> (setup, substrings the message must contain)
HOSTILE_MODEL_JSON = {
    "dot-dot": (_paths("../secret.txt"), ["'../secret.txt'", "'..' segment"]),
    "nested-dot-dot": (_then(_mkdir("sub"), _paths("sub/../../secret.txt")), ["'sub/../../secret.txt'"]),
    "absolute": (_paths("/etc/hostname"), ["'/etc/hostname'", "is absolute"]),
    "symlink-dir-to-etc": (
        _then(_symlink("etclink", "/etc"), _paths("etclink/hostname")),
        ["'etclink/hostname'", "not inside"],
    ),
    "symlink-dir-to-parent": (_then(_symlink("up", ".."), _paths("up/secret.txt")), ["'up/secret.txt'", "not inside"]),
    "symlink-file-out": (
        _then(_symlink("leak.bin", "../secret.txt"), _paths("leak.bin")),
        ["'leak.bin'", "not inside"],
    ),
    "url-encoded": (_paths("%2e%2e/secret.txt"), ["'%2e%2e/secret.txt'", "percent"]),
    "nul": (_paths("a\x00b.bin"), ["a\\x00b.bin", "control character"]),
    "very-long": (_paths("a/" * 3000 + "x.bin"), ["characters long"]),
    "backslash": (_paths("..\\secret.txt"), ["secret.txt", "backslash"]),
    "not-a-string": (_paths(123), ["123", "not a non-empty string"]),
    "empty": (_paths(""), ["''", "not a non-empty string"]),
    "model-json-symlink-out": (_model_json_outside, ["'model.json'", "not inside"]),
    "manifest-not-a-list": (lambda root: _set_manifest(root, "../secret.txt"), ["malformed weightsManifest"]),
    "paths-not-a-list": (
        lambda root: _set_manifest(root, [{"paths": "../secret.txt", "weights": []}]),
        ["malformed weightsManifest"],
    ),
}

COMMANDS = {
    "demo": ("demo", "{root}/tfjs", "-o", "{root}/site"),
    "eval": ("eval", "{root}/tfjs", "-r", "{root}/model", "-d", "{root}/model/eval.npz", "--runs", "1"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("hostile", sorted(HOSTILE_MODEL_JSON))
def test_model_json_paths_stay_inside(case_root, command, hostile):
    setup, needles = HOSTILE_MODEL_JSON[hostile]
    setup(case_root)
    proc = run_case(Case(f"{command}-{hostile}", COMMANDS[command], exit_code=2, names=tuple(needles)), case_root)
    assert "SECRET-OUTSIDE" not in proc.stdout + proc.stderr
    assert not (case_root / "site").exists()


def test_default_labels_symlinked_out_of_the_model_dir_are_refused(case_root):
    """labels.txt beside the model is published in the site, so it too must really be inside the model dir."""
    os.symlink("../secret.txt", case_root / "tfjs" / "labels.txt")
    model_json = case_root / "tfjs" / "model.json"
    doc = json.loads(model_json.read_text())
    doc.pop("userDefinedMetadata", None)  # no labels in the model itself: demo falls back to labels.txt beside it
    model_json.write_text(json.dumps(doc))
    proc = run_case(Case("demo-labels-symlink-out", COMMANDS["demo"], names=("'labels.txt'", "not inside")), case_root)
    assert "SECRET-OUTSIDE" not in proc.stdout + proc.stderr


def test_labels_embedded_in_the_model_win_over_a_hostile_labels_txt(case_root):
    """With labels in model.json, labels.txt beside it is never read (so a symlink out of the dir leaks nothing)."""
    os.symlink("../secret.txt", case_root / "tfjs" / "labels.txt")
    run_case(Case("demo-embedded-labels", COMMANDS["demo"], exit_code=0, may_create=("site",)), case_root)
    site_text = "".join(p.read_text(errors="replace") for p in (case_root / "site").rglob("*.json"))
    assert "SECRET-OUTSIDE" not in site_text


def test_symlink_inside_the_model_dir_is_fine(case_root):
    """The neighbour that must keep working: a shard that is a symlink to a file inside the model dir."""
    _then(_symlink("alias.bin", SHARD), _paths("alias.bin"))(case_root)
    run_case(Case("demo-symlink-inside", COMMANDS["demo"], exit_code=0, may_create=("site",)), case_root)
    copied = case_root / "site" / "model" / "alias.bin"
    assert copied.is_file() and not copied.is_symlink()
    assert copied.read_bytes() == (case_root / "tfjs" / SHARD).read_bytes()


# ------------------------------------------------------------------ property: resolve_inside never escapes

SEGMENTS = [
    "a",
    "b",
    "sub",
    "in_link",
    "out_link",
    "up_link",
    "file.bin",
    "loop",
    "..",
    ".",
    "",
    "%2e%2e",
    "a\\b",
    "x\x00",
    "/",
    "C:",
]


@pytest.fixture(scope="module")
def link_tree(tmp_path_factory) -> Path:
    """base/ with a sub dir, a file, and symlinks pointing inside, outside, to the parent and to themselves."""
    top = tmp_path_factory.mktemp("links")
    base = top / "base"
    (base / "sub" / "a").mkdir(parents=True)
    (base / "file.bin").write_bytes(b"x")
    (base / "sub" / "file.bin").write_bytes(b"y")
    (top / "outside").mkdir()
    (top / "outside" / "file.bin").write_bytes(b"z")
    os.symlink("sub", base / "in_link")
    os.symlink(str(top / "outside"), base / "out_link")
    os.symlink("..", base / "sub" / "up_link")
    os.symlink("..", base / "up_link")
    os.symlink("loop", base / "loop")
    return base


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=6), min_size=1, max_size=6))
def test_resolve_inside_never_escapes(link_tree, parts):
    rel = "/".join(parts)
    try:
        resolved = resolve_inside(link_tree, rel, "model.json")
    except ModelError as exc:
        assert "model.json" in str(exc)
        return
    real, base = Path(os.path.realpath(resolved)), Path(os.path.realpath(link_tree))
    assert base in real.parents, (rel, real)
