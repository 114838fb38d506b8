"""A mode's notes become its manifest entry's fields: a typed note as it is, QAT's fixed batch as the entry's own."""

from __future__ import annotations

from types import SimpleNamespace

from edge_tool.convert.formats.tflite_build import _notes
from edge_tool.convert.modes import QuantMode
from edge_tool.schemas.records import BatchNote, Int16x8Note


def test_a_typed_note_goes_in_unchanged():
    # int16x8 with float fallback records a typed note (a dict-only reading crashed convert with exit 70)
    note = Int16x8Note(("LOG",), "no 16x8 kernel")
    ctx = SimpleNamespace(notes={"int16x8": note})
    assert _notes(ctx, QuantMode.INT16X8) == {"int16x8": note} and not ctx.notes


def test_qats_fixed_batch_becomes_the_entrys_own():
    ctx = SimpleNamespace(notes={"qat": {"shipped": "ptq_int8", "fixed_batch": {"batch": 1, "reason": "refused"}}})
    assert _notes(ctx, QuantMode.QAT) == {"qat": {"shipped": "ptq_int8"}, "fixed_batch": BatchNote(1, "refused")}


def test_no_note_no_fields():
    assert _notes(SimpleNamespace(notes={}), QuantMode.INT8) == {}
