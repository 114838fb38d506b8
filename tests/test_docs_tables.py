"""What is generated from the registries — the mode, format and runtime tables in README.md and the docs pages, and
the schemas' enums of formats and tasks — is what the files hold: one generator (scripts/docs_tables.py) writes
them all, and this is its one sync test."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from edge_tool.convert.formats import FORMATS
from edge_tool.convert.modes import MODES
from edge_tool.core.doc_tables import markers, splice
from edge_tool.evaluate.runtimes import RUNTIMES

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "docs_tables.py"
_spec = importlib.util.spec_from_file_location("docs_tables", SCRIPT)
docs_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_tables)


@pytest.mark.parametrize("name", docs_tables.FILES)
def test_docs_tables_are_the_registrys(name):
    text = (REPO / name).read_text(encoding="utf-8")
    assert docs_tables.regenerated(name, text) == text, f"{name}'s tables differ; run: python scripts/docs_tables.py"


def test_every_table_is_in_the_files_it_names_once():
    for table, (_, files) in docs_tables.TABLES.items():
        start, end = markers(table)
        for name in files:
            text = (REPO / name).read_text(encoding="utf-8")
            assert text.count(start) == text.count(end) == 1, (table, name)


def test_each_table_has_one_row_per_registered_entry():
    entries = {"modes": list(MODES), "formats": list(FORMATS), "runtimes": list(RUNTIMES)}
    for table, (make, _) in docs_tables.TABLES.items():
        rows = make().splitlines()[2:]
        assert [r.split("|")[1].strip(" `") for r in rows] == entries[table], table


def test_a_schema_enum_out_of_step_is_rewritten_in_place():
    name = "edge_tool/schemas/manifest.schema.json"
    text = (REPO / name).read_text(encoding="utf-8")
    stale = text.replace('"format": {"enum": ["tflite", "tfjs", "onnx"]}', '"format": {"enum": ["tflite", "tfjs"]}')
    assert stale != text and docs_tables.regenerated(name, stale) == text
    with pytest.raises(ValueError, match="expected one"):
        docs_tables.regenerated(name, text.replace('"format": {"enum"', '"format": {"type": "string", "enum"'))


def test_missing_markers_are_refused():
    with pytest.raises(ValueError, match="modes-table:start"):
        splice("# no table here\n", "modes", "| x |\n")


def test_check_mode_writes_nothing_and_says_up_to_date():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert (done.returncode, done.stdout.strip()) == (0, "generated tables up to date")
