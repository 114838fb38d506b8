"""Options shared by several commands, defined once."""

from __future__ import annotations

import typer

from edge_tool.modelcode import TRUST_FLAG, TRUST_HELP


def trust_model_code_option():
    """``--trust-model-code`` (inspect, convert, check, eval, demo): the one opt-in to running a model's code."""
    return typer.Option(False, TRUST_FLAG, help=TRUST_HELP)
