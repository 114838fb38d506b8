"""Image folders of many empty files are refused when listed (issue 40, item 10): 100,000 empty ``.png`` made
``eval``/``convert --calibration`` print nothing for 300 s. An empty (0-byte) image file is refused naming how many
there are and one of them, before any file is decoded; the listing costs one directory read and one stat per entry
(no realpath of entries that are not links)."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tool.calibration.errors import CalibrationError
from edge_tool.calibration.loader import load
from edge_tool.calibration.spec import TensorSpec

SPEC = [TensorSpec("x", "float32", (None, 8, 8, 1))]
EMPTY = 20_000


def _png(path):
    from PIL import Image

    Image.fromarray(np.full((8, 8), 7, np.uint8)).save(path)


def test_a_folder_of_20000_empty_pngs_is_refused_at_listing(tmp_path):
    for i in range(EMPTY):
        (tmp_path / f"{i:05d}.png").touch()
    with pytest.raises(CalibrationError) as exc:
        load(tmp_path, SPEC)
    said = str(exc.value)
    assert f"{EMPTY:,} of the {EMPTY:,} image files in {tmp_path} are empty (0 bytes)" in said, said
    assert "unusable image" not in said  # nothing was decoded


@pytest.mark.parametrize("layout", ["flat", "classes"])
def test_one_empty_image_among_good_ones_is_named(tmp_path, layout):
    folder = tmp_path / "a" if layout == "classes" else tmp_path
    folder.mkdir(exist_ok=True)
    for i in range(3):
        _png(folder / f"good{i}.png")
    (folder / "zero.png").touch()
    if layout == "classes":
        (tmp_path / "b").mkdir()
        _png(tmp_path / "b" / "good.png")
    with pytest.raises(
        CalibrationError, match=r"1 of the \d+ image files .* are empty \(0 bytes\), e\.g\. .*zero\.png"
    ):
        load(tmp_path, SPEC)
    (folder / "zero.png").unlink()
    assert load(tmp_path, SPEC).inputs["x"].shape[1:] == (8, 8, 1)  # the same folder without it loads
