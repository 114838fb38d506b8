"""``convert --help`` and ``eval --help`` group their options in panels (Typer's ``rich_help_panel``,
edge_tool/commands/panels.py), each short enough to read on one 80x50 screen; only --help stays ungrouped."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCREEN = 50  # lines of an 80-column terminal


def panels(command: str) -> dict[str, list[str]]:
    """Panel title -> its lines in ``edgetool COMMAND --help`` at 80 columns."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    out = subprocess.run(
        [sys.executable, "-m", "edge_tool", command, "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    found, title = {}, None
    for line in out.splitlines():
        if line.startswith("╭─"):
            title = line.strip("╭─╮ ").strip()
            found[title] = []
        if title:
            found[title].append(line)
        if line.startswith("╰─"):
            title = None
    return found


@pytest.mark.parametrize("command", ["convert", "eval"])
def test_every_panel_fits_a_screen(command):
    found = panels(command)
    assert len(found) >= 5, list(found)
    assert {t: len(lines) for t, lines in found.items() if len(lines) > SCREEN} == {}
    ungrouped = [line for line in found["Options"] if line.lstrip("│ ").startswith("--")]
    assert [line.split()[1] for line in ungrouped] == ["--help"], ungrouped
