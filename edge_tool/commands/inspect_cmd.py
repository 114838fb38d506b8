"""``edgetool inspect``: what a SavedModel or .tflite takes and gives."""

from __future__ import annotations

from pathlib import Path

import typer


def command(
    model: Path = typer.Argument(..., help="SavedModel directory or .tflite file."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables."),
) -> None:
    """Show signatures (names, dtypes, shapes), parameter count and Keras reloadability of a model."""
    raise NotImplementedError
