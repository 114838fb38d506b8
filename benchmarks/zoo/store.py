"""The zoo's result cache: where each (model, cell) result is kept, the key that says whether it is still valid
(edgetool's source hash, the zoo check code's hash, the CLI's options, the model's build and spec), and reading and
writing it. Layout under ``benchmarks/.cache/zoo/`` (``EDGETOOL_ZOO_CACHE``): see ``runner``."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from benchmarks.zoo import models as zmodels

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("EDGETOOL_ZOO_CACHE") or REPO / "benchmarks" / ".cache" / "zoo")
TOOL_DIRS = ("edge_tool", "calibration", "web_demo")
TOOL_SUFFIXES = (".py", ".js", ".html", ".css", ".json")


def tool_hash() -> str:
    """Hash of edgetool's source (package, calibration, page template): results of older code are not reused."""
    digest = hashlib.sha256()
    for top in TOOL_DIRS:
        for f in sorted((REPO / top).rglob("*")):
            if f.suffix in TOOL_SUFFIXES and f.is_file() and not {"vendor", "node_modules"} & set(f.parts):
                digest.update(str(f.relative_to(REPO)).encode() + f.read_bytes())
    return digest.hexdigest()[:16]


CHECK_FILES = (
    "cells.py",
    "checks.py",
    "context.py",
    "oracles.py",
    "verdicts.py",
    "browser.py",
    "wayout.py",
    "page_check.py",
    "refusals.py",
    "../../tests/oracles/litert_run.py",
    "../../tests/oracles/tfjs_check.js",
    "../../tests/oracles/raw_converter.py",
    "../../tests/oracles/task_metrics.py",
)


def zoo_hash() -> str:
    """Hash of the zoo code that decides a cell's result (commands, classification, checks)."""
    digest = hashlib.sha256()
    for name in CHECK_FILES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def result_path(model: str, cell: str) -> Path:
    """Where one cell's result is cached."""
    return CACHE / "results" / model / f"{cell}.json"


def load_result(model: str, cell: str, key: str) -> dict | None:
    """A cached result still valid for ``key``, else None."""
    f = result_path(model, cell)
    if not f.is_file():
        return None
    result = json.loads(f.read_text())
    return result if result.get("key") == model_key(model, key) else None


def load_any_source(model: str, cell: str, key: str) -> dict | None:
    """A cached result valid for ``key`` except, possibly, edgetool's source hash and the zoo check code's hash (its
    first two parts): the result of an older edgetool or check, shown as such by the report (``source``)."""
    f = result_path(model, cell)
    if not f.is_file():
        return None
    result = json.loads(f.read_text())
    mine, theirs = model_key(model, key).split(":"), str(result.get("key", "")).split(":")
    if len(theirs) != len(mine) or theirs[2:] != mine[2:]:
        return None
    return {**result, "source": theirs[0] + ("" if theirs[1] == mine[1] else f" (checks {theirs[1][:6]})")}


def model_key(model: str, key: str) -> str:
    """``key`` plus the model's build hash and its spec (task, expected refusals): either changing redoes its cells."""
    spec = hashlib.sha256(repr(zmodels.SPECS[model]).encode()).hexdigest()[:8]
    return f"{key}:{zmodels.source_hash(model)}:{spec}"


def save(model: str, cell: str, key: str, record: dict) -> dict:
    """Keep ``record`` as the result of (model, cell) under ``key``; the record as written."""
    record = {**record, "model": model, "cell": cell, "key": model_key(model, key)}
    f = result_path(model, cell)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(record, indent=2) + "\n")
    return record
