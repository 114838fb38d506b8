"""scripts/setup.sh's rows: each constraints file pins its own row's TensorFlow and tf-keras within pyproject's ranges,
every row CI runs has one, and a row without one is refused (exit 2, the checked rows named) before anything is made."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib

from packaging.requirements import Requirement

from tests.edgetool_runs import REPO

ROWS = sorted(p.stem for p in (REPO / "scripts" / "constraints").glob("tf*-py*.txt"))


def _pins(row: str) -> dict[str, str]:
    text = (REPO / "scripts" / "constraints" / f"{row}.txt").read_text()
    pairs = (line.split("==", 1) for line in text.splitlines() if "==" in line and not line.startswith("#"))
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pairs}


def test_each_constraints_file_pins_its_own_row_within_pyproject():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    ranges = {Requirement(d).name: Requirement(d).specifier for d in deps}
    assert {"tf2.19-py3.11", "tf2.21-py3.12", "tf2.20-py3.13"} <= set(ROWS)  # the default row and CI's two
    for row in ROWS:
        tf, _ = row.removeprefix("tf").split("-py")
        pins = _pins(row)
        for name in ("tensorflow", "tf-keras"):
            assert pins[name].startswith(tf + "."), (row, name, pins[name])
            assert pins[name] in ranges[name], (row, name, pins[name], ranges[name])
        assert "edgetool" not in pins  # the checkout (or the wheel) is what is installed, never a pinned release


def test_setup_refuses_a_row_that_was_not_checked(tmp_path):
    env = {**os.environ, "EDGETOOL_TF": "2.99", "EDGETOOL_PYTHON": "3.12"}
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert "no checked stack for TensorFlow 2.99 on Python 3.12" in message
    assert "EDGETOOL_TF=2.21 EDGETOOL_PYTHON=3.12" in message and "EDGETOOL_TF=2.19 EDGETOOL_PYTHON=3.11" in message
    assert not (REPO / ".venv-tf2.99-py3.12").exists()
