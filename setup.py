"""The packages setuptools builds (everything else is in pyproject.toml; build_support/ is the build backend).

edge_tool's packages, then the repository's calibration/ and web_demo/ under the names they are installed as,
edge_tool.calibration and edge_tool.web_demo (pyproject's package-dir maps each name to its folder). Found, not
listed, so a new subpackage ships without an edit here.
"""

from setuptools import find_namespace_packages, setup

BESIDE = ("calibration", "web_demo")  # folders at the repository root, installed inside edge_tool/


def _packages() -> list[str]:
    """edge_tool's packages and the two folders' (namespace packages too: web_demo/ui/ holds only data)."""
    own = find_namespace_packages(include=["edge_tool", "edge_tool.*"])
    beside = find_namespace_packages(
        include=[f"{name}{tail}" for name in BESIDE for tail in ("", ".*")],
        exclude=["web_demo.node_modules", "web_demo.node_modules.*"],  # npm's cache for vendoring, never shipped
    )
    return sorted([*own, *(f"edge_tool.{pkg}" for pkg in beside)])


setup(packages=_packages())
