"""Every message built from user data is capped (issue 40, item 8) by the one rule board reasons already followed
(``core.visible.cap``: at most 2,000 characters, its beginning and its end kept around a note of what was cut).
A TF_CONFIG naming 5000 workers that never answer gave a 264 KB error line."""

from __future__ import annotations

import json
import socket

import pytest

from edge_tool.core.visible import LONG_TEXT, cap
from edge_tool.errors import UsageError
from edge_tool.training.peers import wait_for_peers
from tests.edgetool_runs import run_edgetool

WORKERS = 5000


def _closed_ports(n: int) -> list[int]:
    """``n`` ports nothing listens on (bound and released one at a time: the kernel gives distinct ones)."""
    ports = []
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def test_the_cap_keeps_both_ends():
    text = "start " + "x" * 100_000 + " the way out"
    capped = cap(text)
    assert len(capped) <= LONG_TEXT + 60 and capped.startswith("start ") and capped.endswith(" the way out")
    assert "characters cut" in capped and cap("short") == "short"


def test_5000_silent_workers_make_one_bounded_message():
    ports = _closed_ports(WORKERS)
    info = {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]}, "task_type": "worker", "task_index": 0}
    with pytest.raises(UsageError) as exc:
        wait_for_peers(info, 0.2)
    said = str(exc.value)
    assert len(said) < 2 * LONG_TEXT, len(said)
    assert f"worker 1 at 127.0.0.1:{ports[1]}" in said and f"({WORKERS - 1:,} task(s))" in said
    assert said.endswith("or wait longer with --peer-timeout SECONDS.")


def test_a_cli_error_built_from_a_huge_tf_config_is_capped():
    tf_config = json.dumps({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "w" * 100_000, "index": 0}})
    proc = run_edgetool("train", "--strategy", "multiworker", "-o", "/nonexistent/out", env={"TF_CONFIG": tf_config})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "TF_CONFIG task type" in proc.stderr and "characters cut" in proc.stderr
    assert len(proc.stderr) < 3 * LONG_TEXT, len(proc.stderr)
