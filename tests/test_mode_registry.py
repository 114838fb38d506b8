"""The CLI, ``all``/``auto`` and the mode table derive from the mode registry (the docs' copy of the table:
tests/test_docs_tables.py)."""

from __future__ import annotations

from edge_tool.auto.policy import INTEGER_RANK
from edge_tool.commands.quant_options import QUANT_HELP
from edge_tool.convert import fidelity
from edge_tool.convert.modes import MODES, QuantMode, auto_candidates, every_mode, mode_table


def test_table_has_one_row_per_registered_mode():
    rows = mode_table().splitlines()[2:]
    assert [r.split("|")[1].strip(" `") for r in rows] == list(MODES)


def test_all_and_auto_follow_the_registry():
    assert every_mode(False) == tuple(name for name, s in MODES.items() if s.in_all and not s.needs_train_data)
    assert {n for n, s in MODES.items() if not s.in_all} == {"weight-int8", "weight-int4", "weight-int4-block32"}
    assert "qat" in every_mode(True) and "qat" not in every_mode(False)
    assert "fp32" not in auto_candidates(True) and "int8" in auto_candidates(False)
    assert set(auto_candidates(True)) - set(auto_candidates(False)) == {"qat"}


def test_quant_help_names_every_mode():
    for name, spec in MODES.items():
        assert f"{name} = {spec.summary}" in QUANT_HELP


def test_per_mode_facts_live_on_the_spec():
    """auto's integer tie-break and convert's self-check tolerance are ModeSpec fields; the views derive from them."""
    assert list(MODES) == [m.value for m in QuantMode]  # convert's config enum: the registry's modes, in order
    assert set(auto_candidates(True)) <= set(INTEGER_RANK)  # every candidate auto may tie on has a rank
    rank = INTEGER_RANK.__getitem__
    assert rank("int8") == rank("qat") < rank("int8-selective") < rank("int16x8") < rank("dynamic") < rank("fp16")
    assert [m for m in MODES if fidelity.tolerance(m) is not None] == ["fp32", "fp16"]  # the float files only
    assert fidelity.tolerance("fp32") < fidelity.tolerance("fp16")
