"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable

import typer

from edge_tool.commands import panels
from edge_tool.core.visible import visible
from edge_tool.trust import TRUST_FLAG, TRUST_HELP
from edge_tool.trust.custom_objects import FLAG, HELP, use


def trust_model_code_option():
    """``--trust-model-code`` (inspect, convert, check, eval, demo): the one opt-in to running a model's code."""
    return typer.Option(False, TRUST_FLAG, help=TRUST_HELP, rich_help_panel=panels.TRUST)


CUSTOM_OBJECTS = typer.Option(None, FLAG, metavar="MODULE", help=HELP, rich_help_panel=panels.TRUST)
"""``--custom-objects`` (inspect, convert, check, eval, demo): the modules that define a Keras file's classes."""


def use_custom_objects(specs: list[str] | None, trust: bool) -> None:
    """Import the ``--custom-objects`` modules (refused without ``--trust-model-code``) for this command's loaders."""
    use(specs, trust)


def each_of(names: tuple[str, ...], *extra: str) -> Callable:
    """A Typer callback for an option taking a list (repeated and/or comma-separated): every item must be one of
    ``names`` or ``extra`` (case-insensitive), else the run stops before any work with one line naming the choices
    (exit 2). The values pass through unchanged."""

    def check(values: list[str] | None) -> list[str] | None:
        items = [v.strip() for value in values or () for v in value.split(",") if v.strip()]
        bad = [v for v in items if v.lower() not in names and v.lower() not in extra]
        if bad or (values and not items):
            known = ", ".join(names) + (f", or {' or '.join(extra)}" if extra else "")
            raise typer.BadParameter(f"expects one or more of {known}, got {visible(', '.join(bad)) or 'none'}.")
        return values

    return check
