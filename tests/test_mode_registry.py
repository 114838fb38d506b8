"""The CLI, ``all``/``auto`` and the mode table derive from the mode registry (the docs' copy of the table:
tests/test_docs_tables.py)."""

from __future__ import annotations

from edge_tool.commands.convert import QUANT_HELP
from edge_tool.convert.modes import MODES, auto_candidates, every_mode, mode_table


def test_table_has_one_row_per_registered_mode():
    rows = mode_table().splitlines()[2:]
    assert [r.split("|")[1].strip(" `") for r in rows] == [m.value for m in MODES]


def test_all_and_auto_follow_the_registry():
    assert every_mode(False) == tuple(m.value for m, s in MODES.items() if not s.needs_train_data)
    assert "qat" in every_mode(True) and "qat" not in every_mode(False)
    assert "fp32" not in auto_candidates(True) and "int8" in auto_candidates(False)
    assert set(auto_candidates(True)) - set(auto_candidates(False)) == {"qat"}


def test_quant_help_names_every_mode():
    for mode, spec in MODES.items():
        assert f"{mode.value} = {spec.summary}" in QUANT_HELP
