"""Two emulated boards set up differently (tests/device_board.py): the aarch64 one (root, Python 3.11, tflite-runtime
2.14) and a 32-bit armv7l one (Debian bullseye armhf, the distribution's Python 3.9 and numpy 1.19,
tflite-runtime 2.11, a non-root login reached through an ssh config ``Host`` alias). ``edgetool device``,
``check --device`` and ``eval --device`` on the 32-bit board, and both boards in one run: one table, the spread
between them and the host, a board dropping out mid-run. Oracles: the same model run by hand on each board with its
own tflite_runtime over plain ssh, and plain LiteRT on the host (tests.oracles.litert_outputs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests import device_board
from tests.edgetool_runs import run_edgetool
from tests.oracles.litert_outputs import litert_outputs
from tests.test_device import _MODELS

pytestmark = pytest.mark.slow
RUNS = ("--runs", "5", "--warmup", "1")

# Run by hand on a board: its own tflite_runtime on the eval samples in batches of 16 (eval's --batch-size), int8
# input quantized with the model's own scale, int8 output dequantized.
_ORACLE = """
import sys, numpy as np
from tflite_runtime.interpreter import Interpreter
d = sys.argv[1]
x = np.load(d + "/x.npy")
it = Interpreter(model_path=d + "/model.tflite")
i, o = it.get_input_details()[0], it.get_output_details()[0]
rows = []
for k in range(0, len(x), 16):
    s = x[k:k + 16].astype(np.float64)
    if i["dtype"] == np.int8:
        sc, z = i["quantization"]
        s = np.clip(np.round(s / sc + z), -128, 127)
    it.resize_tensor_input(i["index"], list(s.shape))
    it.allocate_tensors()
    it.set_tensor(i["index"], s.astype(i["dtype"]))
    it.invoke()
    y = it.get_tensor(o["index"]).astype(np.float64)
    if o["dtype"] == np.int8:
        sc, z = o["quantization"]
        y = (y - z) * sc
    rows.append(y)
np.save(d + "/y.npy", np.concatenate(rows))
"""


def _board(recipe: device_board.Recipe, home: Path) -> device_board.Board:
    why = device_board.missing(recipe) or device_board.binfmt_problem(recipe)
    if why:
        if os.environ.get("EDGETOOL_ALLOW_NO_DEVICE") == "1":
            pytest.skip(f"EDGETOOL_ALLOW_NO_DEVICE=1 and {why}")
        pytest.fail(f"{why} (.ci/run installs them; set EDGETOOL_ALLOW_NO_DEVICE=1 to skip the device tests)")
    built = device_board.build(device_board.cache_dir(recipe), recipe)
    # a private copy: test_device.py's checks (no runner left, SIGKILL every runner) run on the shared cached board
    # at the same time in another pytest worker, and must not meet these runners
    return device_board.start(device_board.private_root(built, "fleet"), home, recipe=recipe)


@pytest.fixture(scope="module")
def arm32(tmp_path_factory):
    """The 32-bit board (non-root login, ``ssh://armboard``)."""
    b = _board(device_board.ARMHF, tmp_path_factory.mktemp("arm32-home"))
    yield b
    b.stop()
    device_board.remove_private(b.root)


@pytest.fixture(scope="module")
def arm64(tmp_path_factory):
    """The aarch64 board."""
    b = _board(device_board.ARM64, tmp_path_factory.mktemp("arm64-home"))
    yield b
    b.stop()
    device_board.remove_private(b.root)


@pytest.fixture(scope="module")
def fleet_models(tmp_path_factory) -> Path:
    """The digits CNN of test_device (SavedModel, fp32 and int8 .tflite files, 100 labelled samples)."""
    out = tmp_path_factory.mktemp("fleet-models")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1"}
    proc = subprocess.run([sys.executable, "-c", _MODELS, str(out)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _config(tmp_path: Path, *boards) -> dict:
    """One client ssh config reaching every board (the 32-bit one by its ``Host`` alias), as a user's ~/.ssh/config."""
    cfg = tmp_path / "ssh_config"
    cfg.write_text("".join(b.ssh_config.read_text() for b in boards))
    return {"EDGETOOL_SSH_CONFIG": str(cfg)}


def _oracle(board, model: Path, x: np.ndarray) -> np.ndarray:
    """``model`` run on ``board`` by plain ssh with the board's own tflite_runtime (none of edgetool's code)."""
    work = board.root / "tmp" / f"oracle-{uuid.uuid4().hex}"
    work.mkdir()
    work.chmod(0o777)  # the 32-bit board's login is not root
    try:
        shutil.copy(model, work / "model.tflite")
        np.save(work / "x.npy", x)
        proc = board.ssh(f"python3 -c '{_ORACLE}' /tmp/{work.name}")
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return np.load(work / "y.npy")
    finally:
        shutil.rmtree(work)


def _output_scale(path: Path) -> float:
    from ai_edge_litert.interpreter import Interpreter

    return float(Interpreter(model_path=str(path)).get_output_details()[0]["quantization"][0])


def _clean(board, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (board.runner_processes() or board.temp_dirs()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert board.runner_processes() == [] and board.temp_dirs() == [], "the runner left something on the board"


def test_the_32bit_board_is_reported_and_checked(arm32, fleet_models, tmp_path):
    """``edgetool device ssh://armboard`` (an ssh alias, a non-root login): armv7l, Python 3.9, Debian's numpy 1.19,
    tflite-runtime 2.11, ready; ``check --device`` runs the int8 file there."""
    env = _config(tmp_path, arm32)
    assert arm32.url == "ssh://armboard"
    info = run_edgetool("device", arm32.url, "--json", env=env)
    assert info.returncode == 0, info.stdout + info.stderr
    facts = json.loads(info.stdout)
    assert facts["machine"] == "armv7l" and facts["ready"] and facts["emulated"] is True, facts
    assert facts["runtime"] == "tflite_runtime" and facts["runtime_version"].startswith("2.11"), facts
    assert facts["python"].startswith("3.9.") and facts["numpy"].startswith("1.19."), facts
    ok = run_edgetool(
        "check", fleet_models / "int8.tflite", "-t", "litert-cpu", "--device", arm32.url, "--json", env=env
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    result = json.loads(ok.stdout)["results"][0]
    assert result["verdict"] == "runs" and result["details"]["device"]["machine"] == "armv7l", result
    _clean(arm32)


def test_two_boards_one_table_and_their_spread(arm32, arm64, fleet_models, tmp_path):
    """``--device A --device B``: one JSON with a row per artefact × device, each naming its runtime and version;
    the 32-bit board's rows equal its own computation; each device row's spread against the host row equals the
    board's oracle against plain LiteRT on the host; the HTML report shows the spread and says the boards are
    emulated."""
    report, html = tmp_path / "r.json", tmp_path / "r.html"
    arts = [fleet_models / "fp32.tflite", fleet_models / "int8.tflite"]
    proc = run_edgetool(
        "eval",
        *arts,
        "-r",
        fleet_models / "model",
        "-d",
        fleet_models / "eval.npz",
        "--device",
        arm64.url,
        "--device",
        arm32.url,
        *RUNS,
        "--json",
        report,
        "--html",
        html,
        env=_config(tmp_path, arm64, arm32),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(report.read_text())["results"]
    names = [r["artifact"] for r in rows]
    a64, a32 = arm64.url.split("://")[1], "armboard"
    assert names == ["fp32.tflite", "int8.tflite"] + [f"{m}.tflite @ {d}" for d in (a64, a32) for m in ("fp32", "int8")]
    assert rows[0]["runtime"].startswith("ai_edge_litert 2.")
    assert [r["runtime"] for r in rows[2:]] == ["tflite_runtime 2.14.0"] * 2 + ["tflite_runtime 2.11.0"] * 2
    assert [r["device"]["machine"] for r in rows[2:]] == ["aarch64"] * 2 + ["armv7l"] * 2
    data = np.load(fleet_models / "eval.npz")
    for art, board, row in zip(arts * 2, (arm64, arm64, arm32, arm32), rows[2:]):
        mine = _oracle(board, art, data["x"])
        assert row["accuracy"] == pytest.approx(float(np.mean(mine.argmax(1) == data["y"])), abs=1e-12)
        host = litert_outputs(art, data["x"])
        diff = np.abs(mine - host)
        spread = row["spread"]
        assert spread["against"] == art.name and spread["samples"] == 100
        assert spread["max_abs_diff"] == pytest.approx(float(diff.max()), rel=1e-6, abs=1e-9)
        assert spread["top1_disagreements"] == int(np.sum(mine.argmax(1) != host.argmax(1)))
        assert row["latency_ms"]["runs"] == 5 and "emulation" in row["latency_note"]
        if "int8" in art.name:  # whole quantization steps: the count and the steps are exact
            assert spread["samples_differing"] == int(np.sum(diff.max(1) > 0))
            assert spread["max_steps"] == round(float(diff.max()) / _output_scale(art))
        else:
            assert spread["max_steps"] is None and 0 < spread["max_abs_diff"] < 1e-5  # last bits of other kernels
    page = html.read_text()
    assert "Spread between devices" in page and "tflite_runtime 2.11.0" in page and "not a performance figure" in page
    assert "Spread: int8.tflite @ armboard (tflite_runtime 2.11.0)" in proc.stdout
    _clean(arm64)
    _clean(arm32)


def test_a_board_dropping_out_fails_its_own_rows(arm32, arm64, fleet_models, tmp_path_factory, tmp_path):
    """Two boards; the 32-bit one's sshd (a second one on the same board) is killed mid-run: its row fails saying
    it lost the connection, the aarch64 board's row is measured, eval exits 1."""
    second = device_board.start(arm32.root, tmp_path_factory.mktemp("arm32-second"), recipe=device_board.ARMHF)
    cmd = [sys.executable, "-m", "edge_tool", "eval", str(fleet_models / "fp32.tflite")]
    cmd += ["-r", str(fleet_models / "model"), "-d", str(fleet_models / "eval.npz"), "--runs", "300"]
    cmd += ["--device", arm64.url, "--device", second.url, "--json", str(tmp_path / "r.json")]
    try:
        proc = subprocess.Popen(
            cmd,
            env={**os.environ, **_config(tmp_path, arm64, second)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while not second.runner_processes():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(2)
        second.kill_sshd()
        out, err = proc.communicate(timeout=600)
    finally:
        second.stop()
    assert proc.returncode == 1, out + err
    host, on64, on32 = json.loads((tmp_path / "r.json").read_text())["results"]
    assert "failed" not in host and "failed" not in on64 and on64["latency_ms"]["runs"] == 300
    assert "lost the connection" in on32["failed"] or "stopped" in on32["failed"], on32["failed"]
    _clean(arm32, timeout=60)


def test_auto_measures_the_candidates_on_the_board(arm32, fleet_models, tmp_path):
    """``convert --quant auto --objective latency --device ssh://armboard``: the candidates run on the 32-bit board
    (their p50 is the emulated board's, far above the host's for the same file), and decision.json, decision.md and
    the printed decision name the board; a candidate the board's runtime refuses is that candidate's failure."""
    out = tmp_path / "auto"
    proc = run_edgetool(
        "convert",
        fleet_models / "model",
        "-o",
        out,
        "--quant",
        "auto",
        "--max-drop",
        "0.02",
        "--eval-data",
        fleet_models / "eval.npz",
        "--calibration",
        fleet_models / "eval.npz",
        "--objective",
        "latency",
        "--device",
        arm32.url,
        env=_config(tmp_path, arm32),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = json.loads((out / "decision.json").read_text())
    assert decision["device"]["url"] == "ssh://armboard" and decision["device"]["machine"] == "armv7l"
    assert decision["device"]["runtime_version"] == "2.11.0"
    assert "fastest on armboard (armv7l, emulated)" in decision["reason"], decision["reason"]
    assert "measured on the device armboard" in proc.stdout and "armboard" in (out / "decision.md").read_text()
    chosen = next(c for c in decision["candidates"] if c["chosen"])
    host_p50 = _host_p50(out / chosen["file"])
    assert chosen["latency_ms_p50"] > 3 * host_p50, (chosen, host_p50)  # qemu's armv7l, not this x86 CPU
    for c in decision["candidates"]:
        assert not c.get("failed") or "on armboard" in c["failed"], c
    _clean(arm32)


def _host_p50(path: Path) -> float:
    """p50 ms of set_tensor + invoke + get_tensor on this host (plain LiteRT, one thread, 200 calls)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    x = np.zeros(i["shape"], i["dtype"])
    times = []
    for _ in range(200):
        t = time.perf_counter()
        it.set_tensor(i["index"], x)
        it.invoke()
        it.get_tensor(o["index"])
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def test_device_belongs_to_auto(fleet_models, tmp_path):
    """--device with a plain mode, or a malformed URL with --quant auto: exit 2 naming the problem, nothing written."""
    plain = run_edgetool(
        "convert", fleet_models / "model", "-o", tmp_path / "a", "--quant", "int8", "--device", "ssh://pi@h"
    )
    assert plain.returncode == 2 and "--device" in plain.stdout + plain.stderr, plain.stdout + plain.stderr
    bad = run_edgetool(
        "convert",
        fleet_models / "model",
        "-o",
        tmp_path / "b",
        "--quant",
        "auto",
        "--max-drop",
        "0.01",
        "--eval-data",
        fleet_models / "eval.npz",
        "--device",
        "ssh://pi@h/path",
    )
    assert bad.returncode == 2 and "ssh://" in bad.stdout + bad.stderr, bad.stdout + bad.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
