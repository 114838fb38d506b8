"""Directory walkers never leave the folder they were given through symbolic links (calibration.safe_walk).

The image-folder reader (convert/eval/demo data) and the model-directory walkers (content hash, sizes) are run
in-process on real folders with links out, links in, and loops; one CLI case per kind of walker proves the refusal
is exit 2 naming the link, before anything behind it is listed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from edge_tool.calibration.errors import CalibrationError
from edge_tool.calibration.readers.images import ImageFolderReader
from edge_tool.calibration.safe_walk import walk_files
from edge_tool.calibration.spec import TensorSpec
from edge_tool.calibration.types import LoadOptions
from edge_tool.errors import ModelError
from edge_tool.parsers.tree import model_files, tree_bytes
from tests.hostile.harness import Case, run_case

SPEC = [TensorSpec("image", "float32", (None, 8, 8, 1))]


def _png(path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (8, 8)).save(path)


def _reader(path: Path) -> ImageFolderReader:
    return ImageFolderReader(path, SPEC, LoadOptions())


@pytest.fixture
def data(tmp_path) -> Path:
    root = tmp_path / "data"
    for rel in ("cat/a.png", "cat/b.png", "dog/c.png", "shared/d.png"):
        _png(root / rel)
    return root


@pytest.mark.parametrize(
    "link,target",
    [
        ("evil", "/"),  # the reported case: a class folder linked to the file-system root
        ("evil", "/etc"),
        ("cat/deep", "/"),  # a link out one level down inside a class
        ("cat/passwd.png", "/etc/passwd"),  # a file linked out (would be read as an image)
        ("evil", "../outside"),  # relative, to a sibling of the data root
    ],
)
def test_link_out_of_the_root_is_refused_naming_it(data, link, target, monkeypatch):
    (data.parent / "outside").mkdir()
    _png(data.parent / "outside/x.png")
    os.symlink(target, data / link)
    listed: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p=".": listed.append(str(p)) or real_scandir(p))
    with pytest.raises(CalibrationError) as err:
        _reader(data)
    message = str(err.value)
    assert str(data / link) in message and "outside" in message and "\n" not in message
    assert not any(p.startswith(("/etc", "/usr", "/proc", str(data.parent / "outside"))) for p in listed), listed


@pytest.mark.parametrize("link,target", [("loop", "."), ("cat/up", ".."), ("cat/self", "."), ("dog/x/y", "../..")])
def test_link_to_an_ancestor_is_refused_as_a_loop(data, link, target):
    (data / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, data / link)
    with pytest.raises(CalibrationError, match="loop") as err:
        _reader(data)
    assert str(data / link) in str(err.value)


def test_links_inside_the_root_keep_working(data):
    os.symlink("shared", data / "kitten")  # a class folder that is another folder of the data root
    os.symlink("../shared/d.png", data / "dog/d.png")  # an image linked from a shared folder inside the root
    os.symlink(data / "cat", data / "dog/cats")  # an absolute link that stays inside
    reader = _reader(data)
    assert not reader.problems
    assert reader.class_names == ("cat", "dog", "kitten", "shared")
    names = sorted(p.relative_to(data).as_posix() for p in reader.files)
    assert names == ["cat/a.png", "cat/b.png", "dog/c.png", "dog/cats/a.png", "dog/cats/b.png", "dog/d.png"] + [
        "kitten/d.png",
        "shared/d.png",
    ]


def test_the_root_itself_may_be_a_link(data, tmp_path):
    os.symlink(data, tmp_path / "alias")
    assert _reader(tmp_path / "alias").class_names == ("cat", "dog", "shared")


def test_dangling_links_and_fifos_are_skipped(data):
    os.symlink("nowhere.png", data / "cat/dangling.png")
    os.mkfifo(data / "cat/pipe.png")
    assert len(_reader(data).files) == 4


def test_model_directory_walkers(tmp_path):
    model = tmp_path / "model"
    (model / "variables").mkdir(parents=True)
    (model / "saved_model.pb").write_bytes(b"x" * 10)
    (model / "variables/v").write_bytes(b"y" * 5)
    os.symlink("saved_model.pb", model / "alias.pb")
    assert tree_bytes(model) == 25 and len(model_files(model)) == 3
    os.symlink("/", model / "variables/root")
    with pytest.raises(ModelError, match="outside the model directory"):
        tree_bytes(model)
    os.remove(model / "variables/root")
    os.symlink("..", model / "variables/up")
    with pytest.raises(ModelError, match="loop"):
        model_files(model)


def test_a_deep_chain_of_inside_links_terminates(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    os.symlink("../b", root / "a/to_b")
    os.symlink("../a", root / "b/to_a")
    with pytest.raises(CalibrationError, match="loop"):
        walk_files(root)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,link",
    [
        (("convert", "{root}/model", "-o", "{root}/out", "-q", "int8", "--calibration", "{root}/imgs"), "imgs/evil"),
        (("inspect", "{root}/model"), "model/variables/evil"),
    ],
    ids=["convert-calibration-class-link-to-root", "inspect-saved-model-link-to-root"],
)
def test_cli_refuses_a_link_to_root(args, link, tmp_path, keras3_export):
    root = tmp_path / "case"
    shutil.copytree(keras3_export, root / "model")
    _png(root / "imgs/a/x.png")
    os.symlink("/", root / link)
    run_case(replace(Case("link", args), names=(str(root / link), "outside")), root)
