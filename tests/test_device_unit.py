"""``--device`` URLs: only ssh://[user@]host[:port][?python=PATH], every part from a narrow alphabet (exit 2 before
anything runs), so no URL can become an ssh option or a remote shell word."""

from __future__ import annotations

import ast
import io
import json
import os
import struct

import pytest

from edge_tool.device import answers, board_facts
from edge_tool.device.facts import device_record, missing_runtime
from edge_tool.device.lm_run import PROGRAM as LM_PROGRAM
from edge_tool.device.programs import LITERT, TFLM
from edge_tool.device.runner_program import runner_source
from edge_tool.device.session import STDERR_TAIL, _Tail
from edge_tool.device.transport import BOOTSTRAP, host_key_refusal
from edge_tool.device.url import DeviceURL, redact
from edge_tool.errors import UsageError
from edge_tool.evaluate.report import Report
from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, ReferenceResult
from edge_tool.evaluate.runtimes import RUNTIMES
from tests.edgetool_runs import run_edgetool


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
        "sysconfig",
    }
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"time_loop", "tflite_step", "fit_inputs", "main"} <= defined
    assert {"LmSession", "Xorshift32", "sample", "stream", "lm_run", "BoardLm"} <= defined  # the host's LM loop


def test_every_runtime_that_runs_on_a_board_has_a_program_there():
    """A runtime with board rows (``on_board``) names a program the runner sent to the board serves (load, probe,
    latency), and the board serves no program no runtime names; the board is a place, not a runtime."""
    space = {"__name__": "edgetool-device-runner"}
    exec(compile(runner_source().rsplit("_code = main()", 1)[0], "edgetool-device-runner", "exec"), space)
    served = space["_programs"](None)
    assert set(served) == {LITERT.name, TFLM.name, LM_PROGRAM}  # LM_PROGRAM: eval --task lm's (device/lm_run)
    assert all(len(calls) == 3 and all(map(callable, calls)) for calls in served.values())
    assert sorted(n for n, s in RUNTIMES.items() if s.on_board) == ["litert", "tflm"]
    assert "device" not in RUNTIMES


def test_a_password_is_never_echoed():
    """A URL with a password is refused, and the message shows it as ***, whatever else is wrong with it."""
    for url in ("ssh://pi:s3cr3t@host", "http://pi:s3cr3t@host/x", "ssh://pi:p@ss@host?cmd=1", "pi:s3cr3t@host"):
        with pytest.raises(UsageError) as err:
            DeviceURL.parse(url)
        assert "s3cr3t" not in str(err.value) and "p@ss" not in str(err.value), str(err.value)
    assert redact("ssh://pi:p@ss@host:22?python=x") == "ssh://pi:***@host:22?python=x"


def test_two_pythons_on_one_host_are_two_names():
    a, b = DeviceURL.parse("ssh://pi@h"), DeviceURL.parse("ssh://pi@h?python=/opt/venv/bin/python")
    assert a.name == "pi@h" and b.name == "pi@h?python=/opt/venv/bin/python"


def _frame(header: dict, payload: bytes = b"") -> io.BytesIO:
    raw = json.dumps(header).encode()
    return io.BytesIO(struct.pack(">I", len(raw)) + raw + payload)


class _Counting(io.BytesIO):
    """A stream that records how many bytes were asked for."""

    asked = 0

    def read(self, n=-1):
        self.asked += n
        return super().read(n)


@pytest.mark.parametrize(
    "header, expected",
    [
        ({"ok": True, "blob": 4 << 30}, "blob size"),
        ({"ok": True, "arrays": [{"name": "y0", "dtype": "<f8", "shape": [1 << 20, 1 << 20, 8]}]}, "total size"),
        ({"ok": True, "arrays": [{"name": "y0", "dtype": "<U8", "shape": [1]}]}, "numeric dtype"),
        ({"ok": True, "arrays": [{"name": "y0", "dtype": "O", "shape": [1]}]}, "numeric dtype"),
        ({"ok": True, "arrays": [{"name": "y0", "dtype": "<f4", "shape": [-1]}]}, "non-negative sizes"),
    ],
)
def test_oversized_or_odd_frames_are_refused_from_the_header(header, expected):
    """Refused before one byte of the payload is read (the stream is asked only for the header)."""
    stream = _Counting(_frame(header).getvalue())
    with pytest.raises(answers.BadAnswer, match=expected):
        answers.read_answer(stream, lambda specs: None)
    assert stream.asked == stream.tell()


@pytest.mark.parametrize(
    "latency",
    [
        {"times_ns": [], "cold_start_ms": 1.0, "peak_rss_mb": 1.0},
        {"times_ns": [5, -1], "cold_start_ms": 1.0, "peak_rss_mb": 1.0},
        {"times_ns": [5, 1.5], "cold_start_ms": 1.0, "peak_rss_mb": 1.0},
        {"times_ns": ["5"], "cold_start_ms": 1.0, "peak_rss_mb": 1.0},
        {"times_ns": [5], "cold_start_ms": -1.0, "peak_rss_mb": 1.0},
        {"times_ns": [5], "peak_rss_mb": 1.0},
    ],
)
def test_latency_answers_must_be_measurements(latency):
    with pytest.raises(answers.BadAnswer, match="the device answered .*: expected"):
        answers.latency({"latency": True, **latency})


def test_non_finite_numbers_are_refused_by_the_parser():
    raw = b'{"latency": true, "times_ns": [1], "cold_start_ms": NaN, "peak_rss_mb": Infinity}'
    with pytest.raises(answers.BadAnswer, match="finite"):
        answers.read_answer(io.BytesIO(struct.pack(">I", len(raw)) + raw))


def test_hello_strings_are_cut_and_escaped():
    h = answers.hello({"hello": True, "machine": "aarch64", "python": "3.11.2", "cpu": "\x1b[2J" + "x" * 10**6})
    assert len(h["cpu"]) < 400 and "\x1b" not in h["cpu"] and h["cpu"].startswith("\\x1b")
    with pytest.raises(answers.BadAnswer, match="cores"):
        answers.hello({"hello": True, "machine": "aarch64", "python": "3.11.2", "cores": "many"})
    with pytest.raises(answers.BadAnswer, match="tmp"):
        answers.hello({"hello": True, "machine": "aarch64", "python": "3.11.2", "tmp": "/home/pi"})


def test_stderr_is_kept_as_a_bounded_tail():
    r, w = os.pipe()
    tail = _Tail(r)
    block = b"E" * (1 << 20)
    for _ in range(20):
        os.write(w, block)
    os.write(w, b"\nthe last words\n")
    os.close(w)
    said = tail.text()
    assert said.endswith("the last words\n") and len(said) <= STDERR_TAIL


def test_host_key_refusals_say_which_case():
    url = DeviceURL.parse("ssh://pi@board:2222")
    changed = host_key_refusal(
        url,
        "@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@\nIT IS POSSIBLE THAT SOMEONE IS "
        "DOING SOMETHING NASTY!\nHost key verification failed.\n",
    )
    unknown = host_key_refusal(
        url,
        "No ED25519 host key is known for [board]:2222 and you have requested strict "
        "checking.\nHost key verification failed.\n",
    )
    assert "CHANGED" in changed and "man-in-the-middle" in changed and "SOMETHING NASTY" in changed
    assert "ssh-keygen -R [board]:2222" in changed
    assert "not in your known_hosts" in unknown and "CHANGED" not in unknown and "ssh -p 2222 pi@board" in unknown
    assert host_key_refusal(url, "ssh: connect to host board port 2222: Connection refused") is None


@pytest.mark.parametrize(
    "hello, present, absent",
    [
        (
            {"machine": "armv7l", "python": "3.9.2", "numpy": "1.19.5", "root": False},
            ["--user tflite-runtime==2.11.0"],
            ["install ai-edge-litert", "numpy ai-edge-litert", "manylinux"],
        ),
        (
            {"machine": "armv7l", "python": "3.9.2", "numpy": None, "root": False},
            ["apt install python3-numpy"],
            ["install ai-edge-litert", "numpy ai-edge-litert", "manylinux"],
        ),
        (
            {"machine": "aarch64", "python": "3.11.2", "numpy": None, "venv": True, "prefix": "/home/pi/v"},
            ["/home/pi/v/bin/python -m pip install numpy ai-edge-litert"],
            ["--user"],
        ),
        ({"machine": "aarch64", "python": "3.11.2", "numpy": "1.26.4", "root": False}, ["pip install --user"], []),
        (
            {"machine": "aarch64", "python": "3.11.2", "numpy": "1.26.4", "managed": True, "home": "/home/pi"},
            ["-m venv --system-site-packages /home/pi/litert", "/home/pi/litert/bin/python -m pip install ai-edge"],
            ["pip install --user", "`python3 -m pip install"],
        ),
    ],
)
def test_the_fix_works_for_that_interpreter(hello, present, absent):
    fix = missing_runtime({**hello, "sys_path": ["/usr/lib/python3/dist-packages"]}, "python3")
    assert "sys.path: /usr/lib/python3/dist-packages" in fix
    assert all(p in fix for p in present) and not any(a in fix for a in absent), fix


def test_qemu_names_its_32_bit_arm_binary_qemu_arm():
    assert board_facts.QEMU_NAMES["armv7l"] == "arm" and board_facts.QEMU_NAMES.get("aarch64", "aarch64") == "aarch64"
