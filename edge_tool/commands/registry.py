"""The one place commands are registered: (name, function) in the order ``--help`` lists them."""

from __future__ import annotations

from edge_tool.commands import train, inspect_cmd

COMMANDS = [
    ("train", train.command),
    ("inspect", inspect_cmd.command),
]
