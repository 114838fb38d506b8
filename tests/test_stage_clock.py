"""eval's stage clock counts the CPU seconds of its whole process tree: its workers while they live, and after."""

from __future__ import annotations

import subprocess
import sys

from edge_tool.evaluate.stage_clock import StageClock, tree_cpu

BURN = "import time\nwhile time.process_time() < 0.3: pass\nprint('done', flush=True)\ninput()\n"


def test_a_live_child_and_a_reaped_one_count_once(monkeypatch, capsys):
    monkeypatch.setenv("EDGETOOL_VERBOSE", "1")
    clock = StageClock()
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "done\n"  # it has spent 0.3 s of CPU (/proc counts 10 ms ticks) and waits, alive
    live = tree_cpu()
    clock.mark("child alive")
    child.communicate("\n")
    reaped = tree_cpu()
    clock.mark("child reaped")
    assert clock.cpu["child alive"][0] >= 0.28 > clock.cpu["child alive"][1]  # the tree's CPU, then this process's
    assert reaped - live < 0.25  # counted while it lived, not again once reaped
    assert set(clock.stages) == {"child alive", "child reaped"}
    clock.report()
    assert '"child alive"' in capsys.readouterr().err
