"""The one place commands are registered: (name, function) in the order ``--help`` lists them."""

from __future__ import annotations

from edge_tool.commands import convert, inspect_cmd, train
from edge_tool.commands import demo, serve
from edge_tool.commands import eval_cmd
from edge_tool.commands import check
from edge_tool.commands import device_cmd

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
