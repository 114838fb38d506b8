"""docs/architecture.md's floors table is the floors test's: scripts/architecture_doc.py renders it from FLOORS
(tests/test_import_graph.py), each package's docstring and its modules, and this is its sync test (the markers and
splice of tests/test_docs_tables.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "architecture_doc.py"
_spec = importlib.util.spec_from_file_location("architecture_doc", SCRIPT)
architecture_doc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(architecture_doc)


def test_architecture_doc_is_the_floors_tests():
    text = (REPO / architecture_doc.DOC).read_text(encoding="utf-8")
    assert architecture_doc.regenerated(text) == text, (
        "the floors table differs; run: python scripts/architecture_doc.py"
    )


def test_every_floor_package_has_one_row_highest_first():
    rows = architecture_doc.floors_table().splitlines()[2:]
    floors = architecture_doc.floors_test.FLOORS
    assert [int(r.split("|")[1]) for r in rows] == [n for n in reversed(range(len(floors))) for _ in floors[n]]


def test_a_package_added_to_the_floors_gets_its_row(tmp_path):
    pkg = tmp_path / "fleet"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Boards: where a model runs. Connection and facts."""\n')
    (pkg / "ssh.py").write_text("X = 1\n" * 149)
    modules = {"edge_tool.errors": REPO / "edge_tool" / "errors.py", "edge_tool.fleet": pkg / "__init__.py"}
    modules["edge_tool.fleet.ssh"] = pkg / "ssh.py"
    table = architecture_doc.floors_table((("edge_tool.errors",), ("edge_tool.fleet",)), modules)
    assert table.splitlines()[2] == "| 1 | `fleet/` | 2 | ~200 | Boards: where a model runs. |"
    (pkg / "__init__.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="edge_tool.fleet has no docstring"):
        architecture_doc.floors_table((("edge_tool.fleet",),), modules)
    with pytest.raises(ValueError, match=r"edge_tool.gone \(floor 0 of FLOORS\) has no module"):
        architecture_doc.floors_table((("edge_tool.gone",),), modules)


def test_first_sentence_stops_at_a_full_stop_not_inside_a_name():
    first = architecture_doc.first_sentence
    assert first("Train under tf.distribute and\nexport a SavedModel. Then more.\n\nDetails.") == (
        "Train under tf.distribute and export a SavedModel."
    )
    assert first("Read .tflite files (``limits``: a | b)") == "Read .tflite files (`limits`: a \\| b)"
    assert [architecture_doc.rounded_lines(n) for n in (6, 250, 1649)] == ["< 100", "~300", "~1,600"]


def test_check_mode_writes_nothing_and_says_up_to_date():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert (done.returncode, done.stdout.strip()) == (0, "docs/architecture.md: floors table up to date")
