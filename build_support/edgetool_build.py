"""PEP 517 backend: setuptools, but an sdist or wheel without the vendored browser runtimes is refused.

The wheel must carry web_demo/vendor/ (tfjs, its wasm binaries, LiteRT.js) so that ``pip install edgetool-*.whl``
gives a working ``edgetool demo`` on a machine without Node. vendor/ is not in git; ``python
scripts/vendor_runtimes.py`` (scripts/setup.sh runs it) fills it from the pinned web_demo/package-lock.json. Editable
installs pass through unchecked: setup.sh vendors after installing.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F403  (every other hook unchanged)


class _Beside:
    """Finds ``edge_tool.calibration`` and ``edge_tool.web_demo`` in the tree being built (pyproject's package-dir:
    calibration/ and web_demo/ beside edge_tool/), for this build process only: the tree is not installed."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path=None, target=None):
        """The spec of a folder beside edge_tool/ under its edge_tool name; None for every other module."""
        parent, _, name = fullname.rpartition(".")
        if parent != "edge_tool" or name not in ("calibration", "web_demo"):
            return None
        return PathFinder.find_spec(fullname, [self.root])


def _check_vendored() -> None:
    root = os.getcwd()
    beside = _Beside(root)
    sys.path.insert(0, root)
    sys.meta_path.insert(0, beside)
    try:
        from edge_tool.demo.vendor import vendor_status  # noqa: PLC0415  (stdlib-only module of this project)

        problem = vendor_status(Path(root) / "web_demo")  # edge_tool.web_demo, in a checkout and an unpacked sdist
    finally:
        sys.meta_path.remove(beside)
        sys.path.remove(root)
    if problem:
        raise SystemExit(
            f"edgetool build: refusing to build without the vendored browser runtimes ({problem}). Run "
            "`python scripts/vendor_runtimes.py` (needs node + npm once, on the build machine) and build again."
        )


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """setuptools' build_wheel after checking web_demo/vendor/."""
    _check_vendored()
    return _orig.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    """setuptools' build_sdist after checking web_demo/vendor/ (the wheel is built from the sdist)."""
    _check_vendored()
    return _orig.build_sdist(sdist_directory, config_settings)
