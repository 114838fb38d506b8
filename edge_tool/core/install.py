"""Whether this edge_tool is installed: the repository's calibration/ and web_demo/ are its subpackages
``edge_tool.calibration`` and ``edge_tool.web_demo`` only through an install (pyproject's package-dir: the wheel holds
them inside edge_tool/, an editable install maps them with setuptools' own finder). A checkout run uninstalled, or
one whose calibration/ an editable install of another checkout would supply, is refused with one paragraph.

Imports nothing of edgetool (and nothing that needs calibration): ``python -m edge_tool`` runs it first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

NOT_INSTALLED = (
    "edgetool is not installed: edge_tool.calibration and edge_tool.web_demo (the repository's calibration/ and "
    "web_demo/) are subpackages of an installed edgetool only, and this edge_tool ({here}) has none. Run bash "
    "scripts/setup.sh (or pip install -e .) in the checkout, then edgetool or python -m edge_tool."
)
MIXED = (
    "edge_tool was imported from {here} but edge_tool.calibration from {found}: an editable install of another "
    "checkout maps it. Install this checkout (bash scripts/setup.sh or pip install -e .), or run the installed one "
    "without this checkout on PYTHONPATH."
)


def install_problem() -> str | None:
    """Why this edge_tool cannot run (not installed, or its calibration/ from another checkout), or None."""
    here = Path(__file__).resolve().parents[1]
    try:
        spec = importlib.util.find_spec("edge_tool.calibration")
    except ImportError:
        spec = None
    if spec is None or not spec.origin:
        return NOT_INSTALLED.format(here=here)
    found = Path(spec.origin).resolve().parent
    if found in (here / "calibration", here.parent / "calibration"):  # a wheel's, or this checkout's editable mapping
        return None
    return MIXED.format(here=here, found=found)


def require_installed() -> None:
    """Exit 2 with the one paragraph of ``install_problem`` when there is one (before anything imports calibration)."""
    if problem := install_problem():
        print(problem, file=sys.stderr)
        raise SystemExit(2)
