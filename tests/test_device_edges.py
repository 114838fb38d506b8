"""Boards as people set them up (issue 32) and edgetool's own SSH rules (issue 34), on the emulated aarch64 board
and on the host as a device: the runtime found where the user's Python finds it (user site, PYTHONPATH) but never
from the session's working directory; "ready" only when an interpreter ran (a runtime built against another
numpy says why); a board without /proc says memory and emulation are unknown; Python < 3.8 says what it needs;
a changed host key and an unknown one are refused with different messages whatever ~/.ssh/config says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import device_board
from tests.edgetool_runs import run_edgetool

pytestmark = pytest.mark.slow
PYENV = Path.home() / ".pyenv" / "versions"
_SHIM = "from tflite_runtime.interpreter import Interpreter  # the board's own runtime under another name\n"
# tflite-runtime as pip installs it on a board whose numpy is older than the one it was built against: it imports,
# numpy's C API complains on stderr, every interpreter then fails with an opaque SystemError
_ABI = """import sys
print("RuntimeError: module compiled against API version 0xe but this version of numpy is 0xd", file=sys.stderr)


class Interpreter:
    def __init__(self, *args, **kwargs):
        raise SystemError("<built-in method CreateWrapperFromBuffer> returned a result with an error set")
"""
_METADATA = "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The emulated board (tests/device_board.py), its sshd running for this module."""
    why = device_board.missing() or device_board.binfmt_problem()
    if why:
        pytest.skip(why)
    # a private copy: these tests plant runtimes in it, and another worker's test_device.py counts and kills the
    # runners of the shared cached board
    root = device_board.private_root(device_board.build(device_board.cache_dir()), "edges")
    b = device_board.start(root, tmp_path_factory.mktemp("edges-home"))
    yield b
    b.stop()
    device_board.remove_private(root)


def _shim(where: Path, version: str, source: str = "", package: str = "ai_edge_litert") -> None:
    """A runtime package at ``where`` with its dist-info: ``source`` as its interpreter module (default: the
    board's own tflite_runtime underneath)."""
    pkg = where / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "interpreter.py").write_text(source or _SHIM)
    info = where / f"{package}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(_METADATA.format(name=package.replace("_", "-"), version=version))


def _wrapper(board, name: str, env: str, python: str = "/usr/bin/python3") -> str:
    """A ``?python=`` on the board: ``python`` started with ``env`` (as a login's profile would set it)."""
    path = board.root / "opt" / "edges" / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n{env} exec {python} "$@"\n')
    path.chmod(0o755)
    return f"{board.url}?python=/opt/edges/bin/{name}"


def _facts(url: str, board) -> tuple[int, dict]:
    proc = run_edgetool("device", "--json", url, env={"EDGETOOL_SSH_CONFIG": str(board.ssh_config)})
    return proc.returncode, json.loads(proc.stdout)


def test_runtime_from_user_site_and_pythonpath_never_from_the_working_directory(board):
    """``pip install --user`` (the user site) and a vendor SDK's PYTHONPATH are where the user's python3 finds the
    runtime, so the runner finds it there too; a package planted in the login's working directory (/root) is
    never imported; with nothing found the message shows sys.path."""
    opt = board.root / "opt" / "edges"
    _shim(opt / "userbase" / "lib" / "python3.11" / "site-packages", "0.0.1")
    _shim(opt / "sdk", "0.0.2")
    planted = board.root / "root" / "ai_edge_litert"
    planted.mkdir(parents=True, exist_ok=True)
    (planted / "__init__.py").write_text("open('/tmp/edgetool-planted-ran', 'w').write('x')\nraise SystemExit(9)\n")
    try:
        code, user = _facts(_wrapper(board, "usersite", "PYTHONUSERBASE=/opt/edges/userbase"), board)
        assert code == 0 and user["runtime"] == "ai_edge_litert" and user["runtime_version"] == "0.0.1", user
        assert "/opt/edges/userbase/lib/python3.11/site-packages" in user["sys_path"]
        code, sdk = _facts(_wrapper(board, "sdk", "PYTHONPATH=/opt/edges/sdk"), board)
        assert code == 0 and sdk["runtime"] == "ai_edge_litert" and sdk["runtime_version"] == "0.0.2", sdk
        code, plain = _facts(board.url, board)
        assert code == 0 and plain["runtime"] == "tflite_runtime", plain
        assert "No module named 'ai_edge_litert'" in plain["runtime_errors"][0]
        assert not (board.root / "tmp" / "edgetool-planted-ran").exists()
        code, none = _facts(_wrapper(board, "nothing", "PYTHONPATH=/opt/edges/empty", "/usr/bin/python3 -S"), board)
        assert code == 1 and not none["ready"] and "sys.path: " in none["fix"] and "/opt/edges/empty" in none["fix"]
    finally:
        subprocess.run(["rm", "-rf", str(planted)], check=False)


def test_a_runtime_that_imports_but_cannot_run_is_not_ready(board):
    """tflite-runtime built against a newer numpy than the board's imports (printing numpy's complaint) and then
    fails on every interpreter: "ready" is false and numpy's own words reach the user."""
    _shim(board.root / "opt" / "edges" / "abi", "2.13.0", _ABI, package="tflite_runtime")
    code, facts = _facts(_wrapper(board, "abi", "PYTHONPATH=/opt/edges/abi"), board)
    assert code == 1 and facts["ready"] is False, facts
    assert "compiled against API version 0xe" in facts["fix"] and "SystemError" in facts["fix"], facts["fix"]


def test_a_board_without_proc_says_memory_and_emulation_are_unknown(board, tmp_path_factory):
    """The board's userland bind-mounted without its /proc: memory and emulation unknown, never the host's."""
    view = device_board.cache_dir().with_name(f"edges-noproc-{os.getpid()}")
    view.mkdir(mode=0o755)
    subprocess.run(["mount", "--bind", str(board.root), str(view)], check=True)
    try:
        noproc = device_board.start(view, tmp_path_factory.mktemp("noproc-home"))
        subprocess.run(["umount", "-l", str(view / "proc")], check=False, capture_output=True)
        try:
            proc = run_edgetool("device", noproc.url, env={"EDGETOOL_SSH_CONFIG": str(noproc.ssh_config)})
            code, facts = _facts(noproc.url, noproc)
        finally:
            noproc.stop()
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
        view.rmdir()
    assert facts["memory_bytes"] is None and facts["emulated"] is None, facts
    assert "memory    unknown" in proc.stdout and "emulation and memory unknown" in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The host as a device: an sshd on 127.0.0.1 without a chroot."""
    why = device_board.missing()
    if why:
        pytest.skip(why)
    h = device_board.start(Path("/"), tmp_path_factory.mktemp("edges-host"), chroot=False)
    yield h
    h.stop()


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_old_python_says_what_it_needs(host, version):
    """Python 3.6 / 3.7: the runner parses far enough to say it needs Python >= 3.8 (not "unreachable")."""
    found = sorted(PYENV.glob(f"{version}.*/bin/python{version}"))
    if not found:
        pytest.skip(f"no Python {version} under {PYENV}")
    proc = run_edgetool("device", f"{host.url}?python={found[0]}", env={"EDGETOOL_SSH_CONFIG": str(host.ssh_config)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "needs Python ≥ 3.8" in out and f"Python {version}" in out, out
    assert "unreachable" not in out and "SyntaxError" not in out


def test_changed_and_unknown_host_keys_are_refused_with_their_own_message(host, tmp_path):
    """Whatever ~/.ssh/config says (StrictHostKeyChecking no): a changed key is refused with ssh's
    man-in-the-middle warning kept; an unknown key is refused saying how to check and add it."""
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    changed_hosts, unknown_hosts = tmp_path / "changed_known_hosts", tmp_path / "unknown_known_hosts"
    kind, key = (other.with_suffix(".pub")).read_text().split()[:2]
    changed_hosts.write_text(f"[127.0.0.1]:{host.port} {kind} {key}\n")
    unknown_hosts.write_text("")
    results = {}
    for name, known in (("changed", changed_hosts), ("unknown", unknown_hosts)):
        config = tmp_path / f"{name}_config"
        config.write_text(
            host.ssh_config.read_text()
            .replace(str(host.home / "known_hosts"), str(known))
            .replace("StrictHostKeyChecking yes", "StrictHostKeyChecking no")
        )
        proc = run_edgetool("device", host.url, env={"EDGETOOL_SSH_CONFIG": str(config)})
        results[name] = proc.stdout + proc.stderr
        assert proc.returncode == 1, results[name]
    assert "host key has CHANGED" in results["changed"] and "man-in-the-middle" in results["changed"]
    assert "IDENTIFICATION HAS CHANGED" in results["changed"]  # ssh's own warning, kept
    assert "not in your known_hosts" in results["unknown"] and "CHANGED" not in results["unknown"]
    assert "reachable over ssh" not in results["changed"] + results["unknown"]


_CRASHING = """import ctypes
from tflite_runtime.interpreter import Interpreter as _Real


class Interpreter(_Real):
    def invoke(self):
        if getattr(self, "_from_file", False):
            ctypes.string_at(0)  # SIGSEGV, as a runtime that mishandles an op
        return super().invoke()

    def __init__(self, model_path=None, **kwargs):
        self._from_file = model_path is not None
        super().__init__(model_path=model_path, **kwargs)
"""


def test_check_on_a_runtime_that_segfaults_is_a_verdict_and_leaves_the_board_clean(board, tmp_path):
    """The board's runtime dies with SIGSEGV on the model (under qemu, a real segfault of the aarch64 process):
    ``check --device`` gives the model's verdict naming the crash — not "out of memory", not exit 2 — and nothing
    is left in the board's temp dir."""
    _shim(board.root / "opt" / "edges" / "segv", "0.0.3", _CRASHING)
    url = _wrapper(board, "segv", "PYTHONPATH=/opt/edges/segv")
    model = tmp_path / "m.tflite"
    code = (
        "import sys, tensorflow as tf; f = tf.function(lambda x: x * 2.0).get_concrete_function(tf.TensorSpec([1, 4]));"
    )
    code += "open(sys.argv[1], 'wb').write(tf.lite.TFLiteConverter.from_concrete_functions([f], None).convert())"
    subprocess.run([sys.executable, "-c", code, str(model)], check=True, capture_output=True)
    proc = run_edgetool(
        "check",
        model,
        "-t",
        "litert-cpu",
        "--device",
        url,
        "--json",
        env={"EDGETOOL_SSH_CONFIG": str(board.ssh_config)},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = json.dumps(json.loads(proc.stdout)["results"][0])
    assert "crashed (Segmentation fault)" in text and "out-of-memory" not in text, text
    assert not list((board.root / "tmp").glob("edgetool-device-*"))
