"""A source checkout runs uninstalled, with both names of calibration (the wheel's contents: tests/test_wheel.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.edgetool_runs import REPO


def _bare_python(tmp_path: Path) -> Path:
    """A venv without edgetool installed, whose path ends with this environment's site-packages (the dependencies;
    a path entry, so the editable install's import hook in there does not run)."""
    root = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]  # a venv sharing another's packages lists both
    Path(site, "zz_deps.pth").write_text("\n".join(deps) + "\n")
    return root / "bin" / "python"


def test_a_source_checkout_runs_uninstalled_with_both_names(tmp_path):
    """From the repository root: `python -m edge_tool` runs, edge_tool.calibration is the repository's calibration/
    (through the symlink edge_tool/calibration), and the standalone `calibration` imports and loads data too."""
    python = _bare_python(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = (
        "import importlib.util as u, pathlib, sys\n"
        "assert u.find_spec('edge_tool') and u.find_spec('edge_tool').origin.startswith(sys.argv[1])\n"
        "import calibration, edge_tool.calibration as inner\n"
        "from edge_tool.demo.vendor import web_demo_dir\n"
        "assert pathlib.Path(inner.__file__).resolve() == pathlib.Path(calibration.__file__).resolve()\n"
        "assert inner.InputSpec.__module__ == 'edge_tool.calibration.spec', inner.InputSpec.__module__\n"
        "assert (web_demo_dir() / 'index.html').is_file()\n"
    )
    proc = subprocess.run(
        [str(python), "-c", probe, str(REPO)], cwd=REPO, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    np.savez(tmp_path / "d.npz", x=np.arange(12, dtype=np.float32).reshape(6, 2))
    standalone = (  # the standalone package loads data through its own (relative) modules, never edge_tool's
        "import sys, calibration as c\n"
        "ds = c.load(sys.argv[1], [c.InputSpec('x', 'float32', (None, 2))], c.LoadOptions(samples=4, seed=0))\n"
        "assert len(list(ds.representative_dataset()())) == 4\n"
        "assert c.__name__ == 'calibration' and c.InputSpec.__module__ == c.__name__ + '.spec'\n"
        "assert not [m for m in sys.modules if m.startswith('edge_tool')], sorted(sys.modules)\n"
    )
    proc = subprocess.run(
        [str(python), "-c", standalone, str(tmp_path / "d.npz")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = subprocess.run(
        [str(python), "-m", "edge_tool", "--help"], cwd=REPO, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0 and "convert" in proc.stdout, proc.stderr[-2000:]
