"""The one place commands are registered: (name, function) in the order ``--help`` lists them."""

from __future__ import annotations

from edge_tool.commands import check, convert, demo, device_cmd, eval_cmd, inspect_cmd, serve, train

COMMANDS = [
    ("train", train.command),
    ("inspect", inspect_cmd.command),
    ("convert", convert.command),
    ("eval", eval_cmd.command),
    ("check", check.command),
    ("device", device_cmd.command),
    ("demo", demo.command),
    ("serve", serve.command),
]
