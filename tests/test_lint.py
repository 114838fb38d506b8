"""The linter CI runs (issue 24): `ruff check` and `ruff format --check` pass on the repository, with the pinned
ruff and the `[tool.ruff]` settings of pyproject.toml; and those settings mean what they say about lazy imports."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True)


def test_ruff_check_is_clean():
    proc = _ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_pinned_ruff_is_the_one_running():
    test_extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    pinned = next(r.split("==")[1] for r in test_extra if r.startswith("ruff=="))
    assert _ruff("--version").stdout.split() == ["ruff", pinned]


def test_only_heavy_libraries_may_be_imported_inside_functions(tmp_path):
    """The config's own rule, checked on a scratch file: TensorFlow inside a function passes (and at module level
    fails); one of our own modules or the standard library inside a function fails outside edge_tool/commands/."""
    settings = ["--config", str(REPO / "pyproject.toml"), "--no-cache", "--output-format", "concise"]
    cases = {
        "def f():\n    import tensorflow as tf\n\n    return tf\n": [],
        "import tensorflow as tf\n\nX = tf\n": ["TID253"],
        "def f():\n    from edge_tool.errors import UsageError\n\n    return UsageError\n": ["PLC0415"],
        "def f():\n    import json\n\n    return json\n": ["PLC0415"],
    }
    for i, (source, expected) in enumerate(cases.items()):
        f = tmp_path / f"m{i}.py"
        f.write_text(source)
        out = _ruff("check", *settings, "--select", "PLC0415,TID253", str(f), cwd=tmp_path).stdout
        assert [code for code in ("PLC0415", "TID253") if f" {code} " in out] == expected, (source, out)
