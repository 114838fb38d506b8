"""The installed distribution carries both packages, the PWA template and the vendored tfjs runtime."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from conftest import REPO


@pytest.mark.slow
def test_wheel_contains_packages_template_and_runtime(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = list(tmp_path.glob("edgetool-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "edge_tool/cli.py",
        "edge_tool/convert/modes/int8.py",
        "edge_tool/evaluate/tfjs_run.js",
        "calibration/__init__.py",
        "web_demo/index.html",
        "web_demo/app.js",
        "web_demo/sw.template.js",
        "web_demo/package-lock.json",
        "web_demo/vendor/tf.min.js",
    ):
        assert required in names, required
    assert any(n.startswith("web_demo/vendor/") and n.endswith(".wasm") for n in names)
    assert not any("node_modules" in n for n in names)
    assert not any(n.startswith("tests/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "edgetool = edge_tool.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
