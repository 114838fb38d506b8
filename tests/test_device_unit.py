"""``--device`` URLs: only ssh://[user@]host[:port][?python=PATH], every part from a narrow alphabet (exit 2 before
anything runs), so no URL can become an ssh option or a remote shell word."""

from __future__ import annotations

import ast
import json

import pytest
from conftest import run_edgetool

from edge_tool.errors import UsageError
from edge_tool.evaluate.device.facts import device_record
from edge_tool.evaluate.device.session import runner_source
from edge_tool.evaluate.device.transport import BOOTSTRAP
from edge_tool.evaluate.device.url import DeviceURL
from edge_tool.evaluate.report import ArtifactResult, LatencyStats, ReferenceResult, Report


@pytest.mark.parametrize(
    "url, host, user, port, python",
    [
        ("ssh://pi@raspberrypi.local", "raspberrypi.local", "pi", None, "python3"),
        ("ssh://10.0.0.7:2222?python=/usr/bin/python3.11", "10.0.0.7", None, 2222, "/usr/bin/python3.11"),
        ("ssh://jetson", "jetson", None, None, "python3"),
        ("ssh://me@[fe80::1]:22", "fe80::1", "me", 22, "python3"),
    ],
)
def test_accepted_forms(url, host, user, port, python):
    d = DeviceURL.parse(url)
    assert (d.host, d.user, d.port, d.python) == (host, user, port, python)


@pytest.mark.parametrize(
    "url",
    [
        "pi@raspberrypi",
        "http://host",
        "ssh://-oProxyCommand=touch%20x",
        "ssh://host;reboot",
        "ssh://h/path",
        "ssh://u:secret@h",
        "ssh://h?python=$(reboot)",
        "ssh://h?python=-c",
        "ssh://h?cmd=x",
        "ssh://h:0",
        "ssh://h:99999",
        "ssh://-l@h",
        "ssh://h?python=a&python=b",
        "ssh://h#frag",
        "ssh://h?python=py%20thon",
    ],
)
def test_refused_forms(url):
    with pytest.raises(UsageError, match="ssh://"):
        DeviceURL.parse(url)


def test_remote_command_is_a_fixed_text():
    """The bootstrap reads the program from stdin: no file or model name is ever in the remote command line."""
    assert all(c not in BOOTSTRAP for c in '$`"\\')


def test_bad_device_url_exits_2_before_anything_runs(tmp_path):
    proc = run_edgetool(
        "eval", tmp_path / "m.tflite", "-r", tmp_path, "-d", tmp_path / "d.npz", "--device", "ssh://host;touch PWNED"
    )
    assert proc.returncode == 2 and "ssh://[user@]host" in proc.stderr + proc.stdout
    assert not list(tmp_path.iterdir())
    proc = run_edgetool("device", "ssh://-oProxyCommand=x")
    assert proc.returncode == 2


def test_device_rows_in_json_schema_and_tables():
    """A device row round-trips through the published schema; the tables gain a device column ("host" for the
    others) and the footer warns about an emulated device."""
    lat = LatencyStats(1.0, 2.0, 3.0, 1.5, 0.5, 9.0, 5)
    url = DeviceURL.parse("ssh://pi@board:2222")
    hello = {
        "machine": "aarch64",
        "system": "Linux 6.6",
        "cpu": "Cortex-A72",
        "cores": 4,
        "runtime": "tflite_runtime",
        "runtime_version": "2.14.0",
        "python": "3.11.2",
        "emulated": True,
        "emulation": ["QEMU_LD_PREFIX set"],
    }
    row = dict(
        format="tflite",
        quant="int8",
        size_bytes=10,
        size_ratio=0.5,
        accuracy=0.9,
        top_k_accuracy=None,
        reference_accuracy=0.9,
        accuracy_drop=0.0,
        top1_agreement=1.0,
        max_abs_error=0.1,
        mean_abs_error=0.01,
        cosine=0.99,
        latency=lat,
        peak_rss_mb=50.0,
        threads=1,
        runtime="tflite_runtime",
    )
    results = (
        ArtifactResult(artifact="m.tflite", **row),
        ArtifactResult(artifact="m.tflite @ pi@board:2222", device=device_record(url, hello), **row),
    )
    ref = ReferenceResult("model", 20, 0.9, None, lat, "tensorflow", "probs")
    data = {"path": "d.npz", "summary": "x", "samples": 5, "labels": True, "warnings": []}
    report = Report(ref, results, data, {"cpu": "x86"}, {"threads": 1, "warmup": 1, "runs": 5})
    again = Report.from_dict(json.loads(report.to_json()))
    assert again.results[1].device["machine"] == "aarch64" and again.results[0].device is None
    assert report.headers()[-1] == "device"
    assert [r[-1] for r in report.table_rows()] == ["host", "host", "aarch64 (emulated)"]
    assert any("not a performance figure" in line for line in report.footer_lines())
    assert "aarch64 (emulated)" in report.to_markdown()


def test_runner_sent_to_the_device_is_self_contained_python38():
    """The program sent to the device parses as Python 3.8 and imports only the standard library, numpy and the
    TFLite runtimes (nothing of edgetool is installed there); it carries the host's own timing loop."""
    tree = ast.parse(runner_source(), feature_version=(3, 8))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "edge_tool" not in imported and "calibration" not in imported
    assert imported <= {
        "__future__",
        "json",
        "os",
        "platform",
        "queue",
        "shutil",
        "signal",
        "struct",
        "sys",
        "tempfile",
        "threading",
        "time",
        "typing",
        "numpy",
        "importlib",
        "resource",
        "base64",
        "zlib",
        "faulthandler",
        "site",
    }
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"time_loop", "tflite_step", "fit_inputs", "main"} <= defined
