"""Where the page template lies: the package edge_tool.web_demo (index.html, app.js, package.json, vendor/).

The one way edgetool finds it, in every install: inside edge_tool/ in a wheel, the repository's web_demo/ in an
editable install or a checkout (pyproject's package-dir; ``edge_tool/__init__.py``). Never a path built from
``edge_tool.__file__``, which points beside the template in a checkout.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from edge_tool.errors import UsageError


def web_demo_dir() -> Path:
    """Directory of the edge_tool.web_demo template package; UsageError when its index.html is missing."""
    path = Path(str(importlib.resources.files("edge_tool.web_demo")))
    if not (path / "index.html").is_file():
        raise UsageError(f"The web_demo template is missing (looked in {path!s}); reinstall edgetool.")
    return path
