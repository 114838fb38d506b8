"""``convert``'s format-only options (``--tfjs-quant``, ...): each an ``Annotated`` type for the command's signature,
derived from the field of the format's options record that declares it (type and choices, flag, help and default),
as ``--quant`` is derived from the mode registry. A new field of a format's record is one more parameter of
``convert``, typed ``format_option(name)`` (tests/test_hand_lists.py checks that none is missing)."""

from __future__ import annotations

from typing import Annotated

import typer

from edge_tool.commands import panels
from edge_tool.convert.formats import option_owners


def format_option_help(name: str) -> str:
    """A format-only option's --help, from the format that declares it (its help, default, and who takes it)."""
    fmt, row = option_owners()[name]
    default = getattr(row.default, "value", row.default)
    return f"{row.help} Default: {default}. Only --format {fmt} (or all) takes it."


def format_option(name: str):
    """The ``Annotated`` type of format option ``name``: None when not given (its format's default then)."""
    _, row = option_owners()[name]
    option = typer.Option(row.flag, help=format_option_help(name), rich_help_panel=panels.FORMATS)
    return Annotated[row.type | None, option]


TfjsQuantOption = format_option("tfjs_quant")
