"""The mode table in README.md and docs/convert.md is the registry's, and the CLI derives its choices from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge_tool.commands.convert import QUANT_HELP
from edge_tool.convert.modes import MODES, auto_candidates, every_mode, mode_table, with_mode_table

REPO = Path(__file__).resolve().parents[1]
REGENERATE = "python scripts/mode_table.py"


@pytest.mark.parametrize("name", ["README.md", "docs/convert.md"])
def test_docs_mode_table_is_the_registrys(name):
    text = (REPO / name).read_text(encoding="utf-8")
    assert with_mode_table(text) == text, f"{name}'s mode table differs from the registry's; run: {REGENERATE}"


def test_table_has_one_row_per_registered_mode():
    rows = mode_table().splitlines()[2:]
    assert [r.split("|")[1].strip(" `") for r in rows] == [m.value for m in MODES]


def test_missing_markers_are_refused():
    with pytest.raises(ValueError, match="modes-table:start"):
        with_mode_table("# no table here\n")


def test_all_and_auto_follow_the_registry():
    assert every_mode(False) == tuple(m.value for m, s in MODES.items() if not s.needs_train_data)
    assert "qat" in every_mode(True) and "qat" not in every_mode(False)
    assert "fp32" not in auto_candidates(True) and "int8" in auto_candidates(False)
    assert set(auto_candidates(True)) - set(auto_candidates(False)) == {"qat"}


def test_quant_help_names_every_mode():
    for mode, spec in MODES.items():
        assert f"{mode.value} = {spec.summary}" in QUANT_HELP
