"""The demo page's ES modules: their pure parts under `node --test` (tests/js/), and the site's file list."""

from __future__ import annotations

import json
import posixpath
import re
import shutil
import subprocess

import numpy as np
import pytest

from edge_tool.calibration.readers.images import decode_image
from edge_tool.calibration.spec import TensorSpec
from edge_tool.demo.litert_site import LITERT_MODULE, LITERT_MODULES
from edge_tool.demo.lm_site import PAGE_FILES as LM_PAGE_FILES
from edge_tool.demo.site import TEMPLATE_FILES
from tests.edgetool_runs import REPO

WEB = REPO / "web_demo"
JS_TESTS = sorted((REPO / "tests" / "js").glob("*.test.mjs"))
IMPORT = re.compile(
    r"""(?:^import\s[^'"]*?from\s|^export\s[^'"]*?from\s|\bimport\()\s*['"](\.{1,2}/[^'"]+)['"]""", re.M
)
MAX_LINES = 300
LM_JS = sorted(dest for dest in LM_PAGE_FILES.values() if dest.endswith(".js"))  # the LM page (demo --task lm)
# what the LM page starts without a literal import: its worker, and the modules the worker import()s by URL
LM_ENTRIES = ("lm/app.js", "lm/worker.js", "lm/generate.js", "engines/litert-build.js", "engines/litert-log.js")


MIN_NODE = (20, 19)  # the first Node that loads ES modules from a package.json without "type" (web_demo/'s)


def _node() -> str:
    node = shutil.which("node")
    if node is None:  # CI installs node (scripts/setup.sh vendors the runtimes with npm): a missing node is a failure
        pytest.fail("`node` is not on PATH: the page's JS tests (tests/js/) need Node.js 20.19 or newer")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    found = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    if found < MIN_NODE:
        pytest.fail(f"node {version} is too old for the page's JS tests: they need Node.js 20.19 or newer")
    return node


def test_page_modules_pass_their_node_tests():
    assert len(JS_TESTS) >= 3, JS_TESTS
    proc = subprocess.run(
        [_node(), "--test", *map(str, JS_TESTS)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    summary = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", proc.stdout, re.M))
    assert proc.returncode == 0 and summary.get("fail") == "0", proc.stdout[-4000:] + proc.stderr[-2000:]
    assert int(summary["pass"]) == int(summary["tests"]) >= 15


def _imports(module: str) -> set[str]:
    """Site paths of the modules `module` imports by relative path (static or dynamic), transitively."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        seen.add(current)
        for target in IMPORT.findall((WEB / current).read_text()):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
            if resolved not in seen:
                todo.append(resolved)
    return seen


def test_the_site_copies_every_module_the_page_imports():
    copied = {name for name in TEMPLATE_FILES if name.endswith(".js")}
    assert _imports("app.js") == copied  # nothing missing (offline would break), nothing unused
    assert _imports(LITERT_MODULE) - copied == set(LITERT_MODULES)  # --litert adds exactly these
    js = sorted(
        p.relative_to(WEB).as_posix()
        for p in WEB.rglob("*.js")
        if "vendor" not in p.parts and "node_modules" not in p.parts and p.name != "sw.template.js"
    )
    lm = set().union(*(_imports(entry) for entry in LM_ENTRIES))
    assert lm == set(LM_JS) and all(LM_PAGE_FILES[name] == name for name in LM_JS)  # the LM page: all, and only
    assert sorted(copied | set(LITERT_MODULES) | lm) == js


@pytest.mark.parametrize("module", sorted({*(n for n in TEMPLATE_FILES if n.endswith(".js")), *LITERT_MODULES, *LM_JS}))
def test_page_module_is_short_and_has_no_module_level_mutable_state(module):
    text = (WEB / module).read_text()
    assert text.count("\n") <= MAX_LINES, f"{module}: {text.count(chr(10))} lines > {MAX_LINES}"
    assert not re.findall(r"^(?:let|var)\s", text, re.M), (
        f"{module}: module-level let/var (page state belongs to main.js)"
    )
    assert "innerHTML" not in text and "insertAdjacentHTML" not in text  # model text is data: textContent only


_RESAMPLE_DRIVER = """
import fs from 'node:fs';
import { convertRgba, resize } from '%s';
const { images, cases } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = cases.map(({ image, mode, width, height, method, box }) => {
  const im = images[image];
  return Array.from(resize(convertRgba(Uint8Array.from(im.rgba), im.width, im.height, mode), width, height, method,
    box).data);
});
fs.writeFileSync(process.argv[3], JSON.stringify(out));
"""


def test_page_resampling_matches_pillow_byte_for_byte(tmp_path):
    """The page resizes an upload as the Python image readers do (Pillow convert + resize): equal bytes on real photos
    (sklearn's china/flower, cropped and scaled), a random image, down- and upscaling, odd aspect ratios, a crop box."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    rng = np.random.default_rng(0)
    images = [
        china[100:340:2, 50:410:3],
        flower[::7, ::5],
        rng.integers(0, 256, (13, 29, 3), dtype=np.uint8),
        flower[:360:4, 200:245],
    ]  # tall: Pillow 13 runs the vertical pass first
    methods = {"bilinear": Image.BILINEAR, "area": Image.BOX, "nearest": Image.NEAREST}
    cases = [
        {"image": i, "mode": mode, "width": w, "height": h, "method": m, "box": box}
        for i in range(len(images))
        for mode in ("L", "RGB")
        for m in methods
        for (w, h, box) in (
            (32, 32, None),
            (8, 8, None),
            (24, 17, None),
            (61, 45, None),
            (20, 20, [3.5, 1, 11.25, 9]),
            (6, 5, [2, 3, 8, 8]),
        )
    ]
    rgba = [np.dstack([im, np.full(im.shape[:2], 255, np.uint8)]) for im in images]
    (tmp_path / "in.json").write_text(
        json.dumps(
            {
                "images": [{"rgba": a.ravel().tolist(), "width": a.shape[1], "height": a.shape[0]} for a in rgba],
                "cases": cases,
            }
        )
    )
    (tmp_path / "driver.mjs").write_text(_RESAMPLE_DRIVER % (WEB / "ui" / "resample.js").as_uri())
    proc = subprocess.run(
        [_node(), str(tmp_path / "driver.mjs"), str(tmp_path / "in.json"), str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((tmp_path / "out.json").read_text())
    for case, values in zip(cases, got, strict=True):
        img = Image.fromarray(images[case["image"]], "RGB").convert(case["mode"])
        want = np.asarray(
            img.resize(
                (case["width"], case["height"]),
                methods[case["method"]],
                box=tuple(case["box"]) if case["box"] else None,
            )
        ).ravel()
        assert np.array_equal(np.array(values), want), (case, int(np.abs(np.array(values) - want.astype(int)).max()))


_MODEL_IMAGE_DRIVER = """
import fs from 'node:fs';
import { modelImage } from '%s';
const { images } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = images.map(({ rgba, width, height, dims }) => Array.from(modelImage(Uint8Array.from(rgba), width, height,
  dims, { order: dims.channels === 1 ? 'L' : 'RGB', resize: 'bilinear' })));
fs.writeFileSync(process.argv[3], JSON.stringify(out));
"""


def test_page_feeds_what_the_python_image_reader_feeds(tmp_path):
    """The page's upload path (ui/resample.js modelImage) gives the bytes calibration/eval's image reader
    (calibration.readers.images.decode_image) gives for the same PNG/JPEG files: if the readers change how they
    resize, the page must change with them."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    files = []
    for i, (pixels, suffix) in enumerate(
        [(china[50:300, 80:330], "png"), (flower[::3, ::2], "jpg"), (china[:400:5, 600:640], "png")]
    ):
        files.append(tmp_path / f"img{i}.{suffix}")
        Image.fromarray(np.ascontiguousarray(pixels)).save(files[-1], quality=90)
    specs = [
        TensorSpec("image", "float32", (None, 8, 8, 1)),
        TensorSpec("image", "float32", (None, 32, 32, 3)),
        TensorSpec("image", "float32", (None, 24, 40, 3)),
    ]
    images, want = [], []
    for path in files:
        with Image.open(path) as img:
            rgba = np.asarray(img.convert("RGBA"))  # the decoded file, as the browser's canvas holds it
        for spec in specs:
            _, h, w, c = spec.shape
            images.append(
                {
                    "rgba": rgba.ravel().tolist(),
                    "width": rgba.shape[1],
                    "height": rgba.shape[0],
                    "dims": {"height": h, "width": w, "channels": c},
                }
            )
            want.append(decode_image(path, spec, path.name).ravel())
    (tmp_path / "in.json").write_text(json.dumps({"images": images}))
    (tmp_path / "driver.mjs").write_text(_MODEL_IMAGE_DRIVER % (WEB / "ui" / "resample.js").as_uri())
    proc = subprocess.run(
        [_node(), str(tmp_path / "driver.mjs"), str(tmp_path / "in.json"), str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for got, expected, case in zip(json.loads((tmp_path / "out.json").read_text()), want, images, strict=True):
        assert np.array_equal(np.array(got), expected), case["dims"]
