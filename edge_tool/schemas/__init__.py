"""The published JSON Schemas (draft 2020-12) of the files edgetool writes for other programs to read:
``manifest.json`` (convert), the eval JSON report and ``decision.json`` (convert --quant auto).

The ``*.schema.json`` files ship inside the package; ``check`` validates a parsed document against one of them
(with the ``jsonschema`` package: ``validator``) and ``read_json`` reads a possibly hostile file (size checked
before reading) and validates it, both raising one DataError that says what was expected and what was found.
The files' dataclasses are ``manifest.Manifest`` (its records in ``records``), ``evaluate.report.Report`` and
``convert.auto.Decision``, each a ``document.Document`` written and read by ``calibration.serial``.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path

from edge_tool.calibration.safe_open import read_regular
from edge_tool.errors import DataError
from edge_tool.schemas.validator import problems

NAMES = ("manifest", "eval", "decision")
MAX_BYTES = 64 << 20  # far above any real manifest/report (a TFJS manifest lists one entry per shard)
_SHOWN = 3


@functools.cache
def load(name: str) -> dict:
    """The published schema ``name`` (one of NAMES) as a dict."""
    if name not in NAMES:
        raise ValueError(f"no edgetool schema {name!r}; known: {', '.join(NAMES)}")
    return json.loads((importlib.resources.files(__package__) / f"{name}.schema.json").read_text(encoding="utf-8"))


def check(doc, name: str, what: str) -> None:
    """DataError unless ``doc`` is valid under schema ``name``; ``what`` names the file in the message."""
    schema = load(name)
    found = problems(doc, schema)
    if not found:
        return
    more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
    raise DataError(
        f"{what} is not a valid {schema['title']}: {'; '.join(found[:_SHOWN])}{more}. Expected the "
        f"file as edgetool writes it (schema {schema['$id']}, described in docs/schemas.md); rewrite it "
        "with edgetool or remove it."
    )


def load_json(path: Path, name: str):
    """The parsed JSON of the file at ``path`` (size checked first); DataError naming what schema ``name`` expects."""
    path = Path(path)
    title = load(name)["title"]
    raw = read_regular(
        path, f"an {title}", DataError, MAX_BYTES, f"an {title} is far smaller, so this is not one edgetool wrote"
    )
    try:
        return json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataError(
            f"{path} could not be read as an {title} (JSON in UTF-8 expected): {' '.join(str(exc).split())[:200]}."
        ) from None


def read_json(path: Path, name: str):
    """Parse the file at ``path`` and validate it against schema ``name``; DataError for anything else."""
    doc = load_json(path, name)
    check(doc, name, str(path))
    return doc
