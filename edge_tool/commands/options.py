"""Options shared by several commands, defined once."""

from __future__ import annotations

import typer

from edge_tool.modelcode import TRUST_FLAG, TRUST_HELP
from edge_tool.modelcode.custom_objects import FLAG, HELP, use


def trust_model_code_option():
    """``--trust-model-code`` (inspect, convert, check, eval, demo): the one opt-in to running a model's code."""
    return typer.Option(False, TRUST_FLAG, help=TRUST_HELP)


CUSTOM_OBJECTS = typer.Option(None, FLAG, metavar="MODULE", help=HELP)
"""``--custom-objects`` (inspect, convert, check, eval, demo): the modules that define a Keras file's classes."""


def use_custom_objects(specs: list[str] | None, trust: bool) -> None:
    """Import the ``--custom-objects`` modules (refused without ``--trust-model-code``) for this command's loaders."""
    use(specs, trust)
