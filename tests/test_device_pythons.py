"""The device runner on every CPython from 3.8 to 3.13: the host as a device (the loopback sshd of
tests/device_board.py without its chroot), ``?python=`` pointing at a small venv of each interpreter under
``~/.pyenv/versions`` with numpy and the TFLite runtime PyPI has for it (tflite-runtime 2.14 for 3.8-3.11,
ai-edge-litert 2.3 for 3.12-3.13). One ``eval`` with the six devices (they run in parallel); the oracle is the same
model run by each venv's own Python and runtime, without ssh or edgetool."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests import device_board
from tests.edgetool_runs import run_edgetool
from tests.test_device import _MODELS

pytestmark = pytest.mark.slow
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
# minor version -> what its venv installs (the newest runtime with a wheel for it, and a numpy it was built against)
PACKAGES = {
    "3.8": ("numpy==1.24.4", "tflite-runtime==2.14.0"),
    "3.9": ("numpy==1.26.4", "tflite-runtime==2.14.0"),
    "3.10": ("numpy==1.26.4", "tflite-runtime==2.14.0"),
    "3.11": ("numpy==1.26.4", "tflite-runtime==2.14.0"),
    "3.12": ("numpy==2.1.3", "ai-edge-litert==2.3.0"),
    "3.13": ("numpy==2.1.3", "ai-edge-litert==2.3.0"),
}

_ORACLE = """
import sys, numpy as np
try:
    from tflite_runtime.interpreter import Interpreter
except ImportError:
    from ai_edge_litert.interpreter import Interpreter
x = np.load(sys.argv[2])
it = Interpreter(model_path=sys.argv[1])
i, o = it.get_input_details()[0], it.get_output_details()[0]
rows = []
for k in range(0, len(x), 16):
    s = x[k:k + 16].astype(np.float64)
    it.resize_tensor_input(i["index"], list(s.shape))
    it.allocate_tensors()
    it.set_tensor(i["index"], s.astype(i["dtype"]))
    it.invoke()
    rows.append(it.get_tensor(o["index"]).astype(np.float64))
np.save(sys.argv[3], np.concatenate(rows))
"""


def _interpreter(minor: str) -> Path | None:
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"), key=lambda p: [int(v) for v in p.parts[-3].split(".")])
    return found[-1] if found else None


def _venvs() -> dict[str, Path]:
    """{minor: the venv's python}, built once per machine into ~/.cache/edgetool/pythons-<key>/<minor>."""
    missing = [m for m in PACKAGES if _interpreter(m) is None]
    if missing:
        pytest.fail(f"no CPython {', '.join(missing)} under {PYENV} (pyenv install them)")
    key = hashlib.sha256(repr((PACKAGES, [str(_interpreter(m)) for m in PACKAGES])).encode()).hexdigest()[:12]
    base = Path(os.environ.get("EDGETOOL_BOARD_CACHE", Path.home() / ".cache" / "edgetool")) / f"pythons-{key}"
    out = {}
    for minor, packages in PACKAGES.items():
        venv = base / minor
        if not (venv / "ready").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([str(_interpreter(minor)), "-m", "venv", str(venv)], check=True, capture_output=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--only-binary=:all:", *packages]
            proc = subprocess.run(pip, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{minor}: {proc.stderr[-2000:]}"
            (venv / "ready").write_text("")
        out[minor] = venv / "bin" / "python"
    return out


@pytest.fixture(scope="module")
def host_device(tmp_path_factory):
    """The loopback sshd without a chroot: its sessions run on this machine (root "/")."""
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists():
        pytest.fail("the host as a device needs root and openssh-server (.ci/run installs it)")
    d = device_board.start(Path("/"), tmp_path_factory.mktemp("pythons-home"), chroot=False)
    yield d
    d.stop()


def test_the_runner_runs_on_every_cpython(host_device, tmp_path):
    """Six devices, one per CPython 3.8-3.13: each row ran on that Python with that venv's runtime, and equals the
    venv's own run of the model (accuracy exactly; its spread against the host row is that run's difference)."""
    venvs = _venvs()
    models = tmp_path / "m"
    models.mkdir()
    made = subprocess.run(
        [sys.executable, "-c", _MODELS, str(models)],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1"},
    )
    assert made.returncode == 0, made.stderr[-3000:]
    devices = [a for py in venvs.values() for a in ("--device", f"{host_device.url}?python={py}")]
    report = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        models / "fp32.tflite",
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        *devices,
        "--runs",
        "3",
        "--warmup",
        "0",
        "--json",
        report,
        env={"EDGETOOL_SSH_CONFIG": str(host_device.ssh_config)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    host, *rows = json.loads(report.read_text())["results"]
    data = np.load(models / "eval.npz")
    np.save(tmp_path / "x.npy", data["x"])
    assert len(rows) == len(venvs)
    for (minor, python), row in zip(venvs.items(), rows):
        dev = row["device"]
        assert dev["python"].startswith(minor + "."), (minor, dev)
        wanted = PACKAGES[minor][1].split("==")
        assert dev["runtime"] == wanted[0].replace("-", "_") and dev["runtime_version"] == wanted[1], (minor, dev)
        assert dev["emulated"] is False and row["latency_ms"]["runs"] == 3
        out = tmp_path / f"y{minor}.npy"
        ran = subprocess.run(
            [str(python), "-c", _ORACLE, str(models / "fp32.tflite"), str(tmp_path / "x.npy"), str(out)],
            capture_output=True,
            text=True,
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        mine = np.load(out)
        assert row["accuracy"] == pytest.approx(float(np.mean(mine.argmax(1) == data["y"])), abs=1e-12)
        assert row["accuracy"] == host["accuracy"]
        assert row["spread"]["top1_disagreements"] == 0 and row["spread"]["max_abs_diff"] < 1e-5
        if dev["runtime"] == "ai_edge_litert":  # the host's own runtime and version: the remote path adds nothing
            assert row["spread"]["samples_differing"] == 0, row["spread"]
    deadline = time.monotonic() + 30  # no runner of these venvs left (other runners on this machine are not ours)
    while _ours(host_device, venvs) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _ours(host_device, venvs)


def _ours(host_device, venvs: dict) -> list[int]:
    pythons = [str(p).encode() for p in venvs.values()]
    mine = []
    for pid in host_device.runner_processes():
        try:
            if any(p in Path(f"/proc/{pid}/cmdline").read_bytes() for p in pythons):
                mine.append(pid)
        except OSError:
            continue
    return mine
