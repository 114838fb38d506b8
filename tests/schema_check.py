"""Check a file edgetool wrote against its published schema with the ``jsonschema`` package (draft 2020-12; what
edgetool itself validates with when it reads the file back), and check its dataclass writes it back byte for byte
(``from_dict(doc).to_dict()`` dumped as edgetool dumps it)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from edge_tool.auto import Decision
from edge_tool.evaluate.report import Report
from edge_tool.schemas import load
from edge_tool.schemas.manifest import Manifest


def _classes():
    return {"manifest": Manifest, "eval": Report, "decision": Decision}


def validated(path: Path, name: str) -> dict:
    """The parsed file at ``path``, after asserting it is valid under schema ``name`` and round-trips exactly."""
    text = Path(path).read_text()
    doc = json.loads(text)
    jsonschema.Draft202012Validator(load(name)).validate(doc)
    again = _classes()[name].from_dict(doc).to_dict()
    assert json.dumps(again, indent=2) + "\n" == text, f"{name}: the dataclass does not write {path} back unchanged"
    return doc
