"""The repository's calibration/ and web_demo/ are edge_tool.calibration and edge_tool.web_demo, and nothing else, in
an editable install (the wheel and the sdist: tests/test_wheel.py); a checkout run uninstalled is refused.

One module identity (issues 33 and 41): the folders lie at the repository root, pyproject's package-dir maps them
into edge_tool for the builds and for ``pip install -e`` (setuptools' own editable finder), and the package face
holds no import hook: it is a version, one import and ``__all__``. Imported under their folder names, both refuse.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tool.core.install import install_problem
from tests.edgetool_runs import REPO
from tests.test_wheel import _copy_checkout

# Run in a child: prints where edge_tool, its two mapped packages and the page template were found, then loads data
# through edge_tool.calibration and asserts the load imported no edgetool module outside it (calibration stands
# alone), and that the folder name `calibration` is refused (sys.path[0] is the cwd, the checkout in some runs).
PROBE = """
import json, sys
import edge_tool, edge_tool.calibration as c, edge_tool.web_demo as w
from edge_tool.core.webdemo import web_demo_dir
before = set(sys.modules)
ds = c.load(sys.argv[1], [c.InputSpec("x", "float32", (None, 2))], c.LoadOptions(samples=4, seed=0))
assert len(list(ds.representative_dataset()())) == 4
assert c.InputSpec.__module__ == "edge_tool.calibration.spec", c.InputSpec.__module__
added = sorted(m for m in set(sys.modules) - before if m.startswith("edge_tool") and not m.startswith(c.__name__))
assert added == [], added
refused = None
try:
    __import__("calibration")  # the folder's own name: refused, or not on the path
except ImportError as exc:
    refused = str(exc)
print(json.dumps({"edge_tool": edge_tool.__file__, "calibration": c.__file__, "web_demo": w.__file__,
                  "template": str(web_demo_dir()), "refused": refused}))
"""


def _venv(tmp_path: Path) -> Path:
    """A venv without edgetool installed, whose path ends with this environment's site-packages (the dependencies;
    a path entry, so the editable install's import hook in there does not run)."""
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]  # a venv sharing another's packages lists both
    Path(site, "zz_deps.pth").write_text("\n".join(deps) + "\n")
    return root


def _probe(python: Path, cwd: Path, data: Path, *flags: str, pythonpath: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run(
        [str(python), *flags, "-c", PROBE, str(data)], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _assert_from(found: dict, checkout: Path, on_path: bool = False) -> None:
    """Every file from ``checkout``; the name ``calibration`` not importable (refused by the package itself when the
    checkout is on sys.path, ``on_path``)."""
    assert found == {
        "edge_tool": str(checkout / "edge_tool" / "__init__.py"),
        "calibration": str(checkout / "calibration" / "__init__.py"),
        "web_demo": str(checkout / "web_demo" / "__init__.py"),
        "template": str(checkout / "web_demo"),
        "refused": found["refused"],
    }
    refusal = "is the package edge_tool.calibration, not 'calibration'" if on_path else "No module named 'calibration'"
    assert refusal in found["refused"], found["refused"]


@pytest.fixture
def data(tmp_path) -> Path:
    np.savez(tmp_path / "d.npz", x=np.arange(12, dtype=np.float32).reshape(6, 2))
    return tmp_path / "d.npz"


def _run(python: Path, cwd: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_the_face_is_a_version_one_import_and_all():
    """edge_tool/__init__.py defines nothing: its docstring, ``__version__``, one import and ``__all__``."""
    body = ast.parse((REPO / "edge_tool" / "__init__.py").read_text()).body
    kinds = [type(node).__name__ for node in body]
    assert kinds == ["Expr", "Assign", "ImportFrom", "Assign"], kinds
    assert [t.id for t in body[1].targets] == ["__version__"] and [t.id for t in body[3].targets] == ["__all__"]
    assert body[2].module == "edge_tool.api"


def test_a_source_checkout_run_uninstalled_is_refused(tmp_path, data):
    """From the repository root with nothing installed: `python -m edge_tool` exits 2 with the way out, the Python
    face still imports (it loads nothing of edgetool), and no hook finds the folders behind the install's back."""
    python = _venv(tmp_path) / "bin" / "python"
    proc = _run(python, REPO, "-m", "edge_tool", "--help")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert "edgetool is not installed" in proc.stderr and "bash scripts/setup.sh (or pip install -e .)" in proc.stderr
    code = (
        "import sys, edge_tool\n"
        "try:\n    import edge_tool.calibration\nexcept ModuleNotFoundError as exc:\n    print(exc.name)\n"
        "print(sorted(type(f).__module__ for f in sys.meta_path if type(f).__module__.startswith('edge_tool')))\n"
    )
    proc = _run(python, REPO, "-c", code)
    assert proc.returncode == 0 and proc.stdout.split("\n")[:2] == ["edge_tool.calibration", "[]"], proc.stderr


def test_this_test_environment_is_an_install_of_this_checkout():
    """The test venv (scripts/setup.sh: an editable install) maps calibration/ of the checkout these tests lie in."""
    assert install_problem() is None


@pytest.mark.slow  # pip builds the editable wheel in an isolated environment (setuptools from the index)
def test_editable_install_maps_the_folders_in_every_process(tmp_path, data):
    """`pip install -e` (as scripts/setup.sh installs): a process started elsewhere, and an isolated (-I) child of
    it, find edge_tool.calibration and the page template in the installed checkout through setuptools' editable
    finder alone. With another checkout on PYTHONPATH (a worktree beside the editable install), whose edge_tool
    would take the installed checkout's calibration/, edgetool refuses instead of running half from each."""
    checkout = _copy_checkout(tmp_path / "src", with_vendor=False)
    venv = _venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps", "-q", "-e"]
        + [str(checkout)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _assert_from(_probe(venv / "bin" / "python", elsewhere, data), checkout)
    _assert_from(_probe(venv / "bin" / "python", elsewhere, data, "-I"), checkout)
    mixed = _run(venv / "bin" / "python", elsewhere, "-m", "edge_tool", "--help", pythonpath=REPO)
    assert mixed.returncode == 2 and "an editable install of another checkout maps it" in mixed.stderr, mixed.stderr
    proc = _run(venv / "bin" / "edgetool", elsewhere, "--help")
    assert proc.returncode == 0 and "convert" in proc.stdout, proc.stderr[-2000:]
