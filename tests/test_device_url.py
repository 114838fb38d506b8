"""``--device`` URLs: only ssh://[user@]host[:port][?python=PATH], every part from a narrow alphabet (exit 2 before
anything runs), so no URL can become an ssh option or a remote shell word."""

from __future__ import annotations

import pytest

from conftest import run_edgetool
from edge_tool.errors import UsageError
from edge_tool.evaluate.device.transport import BOOTSTRAP
from edge_tool.evaluate.device.url import DeviceURL


@pytest.mark.parametrize("url, host, user, port, python", [
    ("ssh://pi@raspberrypi.local", "raspberrypi.local", "pi", None, "python3"),
    ("ssh://10.0.0.7:2222?python=/usr/bin/python3.11", "10.0.0.7", None, 2222, "/usr/bin/python3.11"),
    ("ssh://jetson", "jetson", None, None, "python3"),
    ("ssh://me@[fe80::1]:22", "fe80::1", "me", 22, "python3"),
])
def test_accepted_forms(url, host, user, port, python):
    d = DeviceURL.parse(url)
    assert (d.host, d.user, d.port, d.python) == (host, user, port, python)


@pytest.mark.parametrize("url", [
    "pi@raspberrypi", "http://host", "ssh://-oProxyCommand=touch%20x", "ssh://host;reboot", "ssh://h/path",
    "ssh://u:secret@h", "ssh://h?python=$(reboot)", "ssh://h?python=-c", "ssh://h?cmd=x", "ssh://h:0",
    "ssh://h:99999", "ssh://-l@h", "ssh://h?python=a&python=b", "ssh://h#frag", "ssh://h?python=py%20thon",
])
def test_refused_forms(url):
    with pytest.raises(UsageError, match="ssh://"):
        DeviceURL.parse(url)


def test_remote_command_is_a_fixed_text():
    """The bootstrap reads the program from stdin: no file or model name is ever in the remote command line."""
    assert all(c not in BOOTSTRAP for c in "$`\"\\")


def test_bad_device_url_exits_2_before_anything_runs(tmp_path):
    proc = run_edgetool("eval", tmp_path / "m.tflite", "-r", tmp_path, "-d", tmp_path / "d.npz",
                        "--device", "ssh://host;touch PWNED")
    assert proc.returncode == 2 and "ssh://[user@]host" in proc.stderr + proc.stdout
    assert not list(tmp_path.iterdir())
    proc = run_edgetool("device", "ssh://-oProxyCommand=x")
    assert proc.returncode == 2
