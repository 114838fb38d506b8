"""The input-contract options, defined once for convert, eval, check and demo (see ``edge_tool.contract``)."""

from __future__ import annotations

import typer

from edge_tool.commands import panels
from edge_tool.contract.options import MEAN_HELP, RANGE_HELP, STD_HELP

INPUT_RANGE = typer.Option(
    None, "--input-range", metavar="0..1|-1..1|0..255|imagenet", help=RANGE_HELP, rich_help_panel=panels.CONTRACT
)
INPUT_MEAN = typer.Option(None, "--input-mean", help=MEAN_HELP, rich_help_panel=panels.CONTRACT)
INPUT_STD = typer.Option(None, "--input-std", help=STD_HELP, rich_help_panel=panels.CONTRACT)
