"""``eval --device`` against an emulated aarch64 board (tests/device_board.py): a real sshd, a real aarch64 Python
with tflite-runtime under qemu-user; the oracle runs the model on the board with plain ssh + tflite_runtime."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from edge_tool.parsers.tflite_schema import tflite_schema
from tests import device_board
from tests.edgetool_runs import REPO, run_edgetool

pytestmark = pytest.mark.slow
RUNS = ("--runs", "5", "--warmup", "1")

_MODELS = """
import sys, numpy as np, tensorflow as tf, tf_keras as keras
from sklearn.datasets import load_digits
keras.utils.set_random_seed(0)
d = load_digits()
x = (d.images / 16.0).astype("float32").reshape(-1, 8, 8, 1)
inp = keras.Input((8, 8, 1), name="image")
h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
out = keras.layers.Dense(10, activation="softmax", name="probs")(keras.layers.Flatten()(h))
m = keras.Model(inp, out)
m.compile("adam", "sparse_categorical_crossentropy")
m.fit(x[:1200], d.target[:1200], epochs=4, batch_size=32, verbose=0)
o = sys.argv[1]
m.save(o + "/model", save_format="tf")
np.savez(o + "/eval.npz", x=x[1200:1300], y=d.target[1200:1300])
def rep():
    for i in range(100):
        yield [x[i:i + 1]]
c = tf.lite.TFLiteConverter.from_saved_model(o + "/model")
open(o + "/fp32.tflite", "wb").write(c.convert())
c = tf.lite.TFLiteConverter.from_saved_model(o + "/model")
c.optimizations = [tf.lite.Optimize.DEFAULT]
c.representative_dataset = rep
c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
c.inference_input_type = tf.int8
c.inference_output_type = tf.int8
open(o + "/int8.tflite", "wb").write(c.convert())
one = tf.function(lambda image: {"probs": m(image)}).get_concrete_function(tf.TensorSpec([1, 8, 8, 1], name="image"))
tf.saved_model.save(m, o + "/batch1", signatures=one)  # a graph traced at batch 1: its .tflite runs only at batch 1
open(o + "/fixed1.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model(o + "/batch1").convert())
"""

# The oracle on the board: tflite_runtime in batches of 16 (eval's --batch-size, batched as eval found the model
# allows: its row says so), int8 input quantized with the model's own scale.
_ORACLE = """
import sys, numpy as np
from tflite_runtime.interpreter import Interpreter
d = sys.argv[1]
x = np.load(d + "/x.npy")
it = Interpreter(model_path=d + "/model.tflite")
i, o = it.get_input_details()[0], it.get_output_details()[0]
rows = []
b = int(sys.argv[2])
for k in range(0, len(x), b):
    s = x[k:k + b].astype(np.float64)
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


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The emulated board, built or taken from the cache, its sshd running for this module."""
    why = device_board.missing() or device_board.binfmt_problem()
    if why:
        # as the browser tests: a missing board fails the suite unless skipping was asked for explicitly
        if os.environ.get("EDGETOOL_ALLOW_NO_DEVICE") == "1":
            pytest.skip(f"EDGETOOL_ALLOW_NO_DEVICE=1 and {why}")
        pytest.fail(
            f"{why} (.ci/run installs qemu-user-static, debootstrap and openssh-server; "
            "set EDGETOOL_ALLOW_NO_DEVICE=1 to skip the device tests)"
        )
    root = device_board.build(device_board.cache_dir())
    b = device_board.start(root, tmp_path_factory.mktemp("board-home"))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A tiny digits CNN (SavedModel) with fp32 and int8 (int8 I/O) .tflite files and 100 labelled eval samples."""
    out = tmp_path_factory.mktemp("device-models")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _MODELS, str(out)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _env(board, config: Path | None = None) -> dict:
    return {"EDGETOOL_SSH_CONFIG": str(config or board.ssh_config)}


def _oracle(board, model: Path, x: np.ndarray, batch: int = 16) -> np.ndarray:
    """Outputs of ``model`` computed on the board by plain ssh + tflite_runtime (none of edgetool's code)."""
    work = board.root / "tmp" / f"oracle-{uuid.uuid4().hex}"
    work.mkdir()
    try:
        shutil.copy(model, work / "model.tflite")
        np.save(work / "x.npy", x)
        proc = board.ssh(f"python3 -c '{_ORACLE}' /tmp/{work.name} {batch}")
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return np.load(work / "y.npy")
    finally:
        shutil.rmtree(work)


def _reference(models: Path, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    fn = tf.saved_model.load(str(models / "model")).signatures["serving_default"]
    return np.concatenate([fn(tf.constant(x[k : k + 16]))["probs"].numpy() for k in range(0, len(x), 16)]).astype(
        np.float64
    )


def _assert_device_clean(board, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (board.runner_processes() or board.temp_dirs()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert board.runner_processes() == [], "a runner process is left on the device"
    assert board.temp_dirs() == [], f"temp dirs left on the device: {board.temp_dirs()}"


def test_device_rows_equal_an_independent_run_on_the_board(board, models, tmp_path):
    """machine aarch64, the board's runtime; accuracy and drift equal the oracle's outputs (also for a file that
    runs only at batch 1: fed one sample per invoke); hostile file names."""
    hostile = tmp_path / "a b'\"$(touch PWNED);`touch PWNED2`"
    hostile.mkdir()
    kinds = ("fp32", "int8", "fixed1")
    arts = [shutil.copy(models / f"{m}.tflite", hostile / f"{m} $(touch X); '.tflite") for m in kinds]
    report = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        *arts,
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        "--device",
        board.url,
        *RUNS,
        "--json",
        report,
        env=_env(board),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(report.read_text())["results"]
    assert [r.get("device") is not None for r in rows] == [False] * 3 + [True] * 3
    data = np.load(models / "eval.npz")
    ref = _reference(models, data["x"])
    for kind, art, row, here in zip(kinds, arts, rows[3:], rows):
        dev = row["device"]
        assert row["accuracy_pass"] == ("batch 1 (fixed batch 1)" if kind == "fixed1" else "batched"), row
        assert here["accuracy"] == row["accuracy"]
        assert dev["machine"] == "aarch64" and dev["runtime"] == "tflite_runtime" and dev["emulated"] is True
        assert dev["runtime_version"].startswith("2.14") and dev["url"] == board.url
        out = _oracle(board, Path(art), data["x"], 1 if kind == "fixed1" else 16)
        assert row["accuracy"] == pytest.approx(float(np.mean(out.argmax(1) == data["y"])), abs=1e-12)
        assert row["top1_agreement"] == pytest.approx(float(np.mean(out.argmax(1) == ref.argmax(1))), abs=1e-12)
        assert row["max_abs_error"] == pytest.approx(float(np.max(np.abs(out - ref))), rel=1e-6, abs=1e-9)
        assert row["mean_abs_error"] == pytest.approx(float(np.mean(np.abs(out - ref))), rel=1e-6, abs=1e-12)
        lat = row["latency_ms"]
        assert lat["runs"] == 5 and lat["p50"] > 0 and lat["cold_start"] > 0 and row["peak_rss_mb"] > 0
        assert "emulation" in row["latency_note"]
    assert "emulation" in proc.stdout and "aarch64" in proc.stdout
    for where in (tmp_path, REPO, board.root / "root", board.root / "tmp", board.root):  # cwd and HOME, both ends
        assert not [p for p in where.iterdir() if p.name.startswith(("PWNED", "X"))]
    _assert_device_clean(board)


def test_unreachable_device_and_unknown_host_key_are_row_failures(board, models, tmp_path):
    """Nothing listening, or a host key not in known_hosts: those rows fail with ssh's reason, the host row runs."""
    strange = tmp_path / "ssh_config"
    (tmp_path / "empty_known_hosts").write_text("")
    strange.write_text(
        board.ssh_config.read_text().replace(str(board.home / "known_hosts"), str(tmp_path / "empty_known_hosts"))
    )
    closed = f"ssh://root@127.0.0.1:{device_board._free_port()}"
    report = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        models / "fp32.tflite",
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        "--device",
        closed,
        "--device",
        board.url,
        *RUNS,
        "--json",
        report,
        env=_env(board, strange),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads(report.read_text())["results"]
    assert "failed" not in rows[0] and rows[0]["accuracy"] is not None
    assert "cannot reach" in rows[1]["failed"] and "refused" in rows[1]["failed"].lower()
    assert "Host key verification failed" in rows[2]["failed"]


def test_device_without_runtime_names_the_fix(board, models, tmp_path):
    """A Python with neither numpy nor a TFLite runtime: the row says what to install."""
    bare = board.root / "opt" / "bare" / "python3"
    bare.parent.mkdir(parents=True, exist_ok=True)
    bare.write_text('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    bare.chmod(0o755)
    report = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        models / "int8.tflite",
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        "--device",
        board.url + "?python=/opt/bare/python3",
        *RUNS,
        "--json",
        report,
        env=_env(board),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = json.loads(report.read_text())["results"][1]["failed"]
    assert "pip install numpy ai-edge-litert" in failed, failed
    _assert_device_clean(board)


def _start_eval(board, models, tmp_path, env_config: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edge_tool",
            "eval",
            str(models / "fp32.tflite"),
            "-r",
            str(models / "model"),
            "-d",
            str(models / "eval.npz"),
            "--device",
            board.url,
            "--runs",
            "300",
            "--json",
            str(tmp_path / "r.json"),
        ],
        env={**os.environ, **_env(board, env_config)},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_runner(board, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while not board.runner_processes():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)


def test_sigterm_mid_run_leaves_nothing_on_the_device(board, models, tmp_path):
    proc = _start_eval(board, models, tmp_path)
    _wait_for_runner(board, proc)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, out + err
    _assert_device_clean(board)


def test_killed_sshd_mid_run_is_the_rows_failure_not_a_hang(board, models, tmp_path_factory, tmp_path):
    """A second sshd on the same board, killed while its runner works: the row fails with the reason, eval ends."""
    second = device_board.start(board.root, tmp_path_factory.mktemp("board2"))
    try:
        proc = _start_eval(second, models, tmp_path)
        _wait_for_runner(second, proc)
        time.sleep(2)
        second.kill_sshd()
        out, err = proc.communicate(timeout=300)
    finally:
        second.stop()
    assert proc.returncode == 1, out + err
    row = json.loads((tmp_path / "r.json").read_text())["results"][1]
    assert "lost the connection" in row["failed"] or "stopped" in row["failed"], row["failed"]
    _assert_device_clean(board, timeout=60)


def _future_ops(src: Path, dst: Path) -> Path:
    """``src`` with every operator at version 99: a model newer than any runtime (the board's 2.14 included)."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(src.read_bytes()), 0))
    for code in model.operatorCodes:
        code.version = 99
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst.write_bytes(builder.Output())
    return dst


def test_check_and_device_commands_ask_the_board(board, models, tmp_path):
    """check --device: litert-cpu runs / fails as the board's runtime says; eval makes the refusal that row's
    failure; edgetool device reports the board."""
    env = _env(board)
    ok = run_edgetool("check", models / "int8.tflite", "-t", "litert-cpu", "--device", board.url, "--json", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    result = json.loads(ok.stdout)["results"][0]
    assert result["verdict"] == "runs" and result["details"]["device"]["machine"] == "aarch64"
    future = _future_ops(models / "fp32.tflite", tmp_path / "future.tflite")
    bad = run_edgetool("check", future, "-t", "litert-cpu", "--device", board.url, env=env)
    assert bad.returncode == 1 and "version '99'" in bad.stdout, bad.stdout + bad.stderr
    report = tmp_path / "r.json"
    proc = run_edgetool(
        "eval",
        future,
        models / "int8.tflite",
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        "--device",
        board.url,
        *RUNS,
        "--json",
        report,
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {r["artifact"]: r for r in json.loads(report.read_text())["results"]}
    name = board.url.split("://")[1]
    assert "version '99'" in rows[f"future.tflite @ {name}"]["failed"]
    assert rows[f"int8.tflite @ {name}"]["latency_ms"]["runs"] == 5  # the other device row still measured
    info = run_edgetool("device", board.url, "--json", env=env)
    assert info.returncode == 0, info.stdout + info.stderr
    facts = json.loads(info.stdout)
    assert facts["machine"] == "aarch64" and facts["ready"] and facts["runtime"] == "tflite_runtime"
    assert facts["emulated"] is True and facts["free_disk_bytes"] > 0 and facts["cores"] >= 1
    _assert_device_clean(board)


def test_runner_killed_mid_run_is_the_rows_failure(board, models, tmp_path):
    """The runner SIGKILLed on the device (what the out-of-memory killer does): that row fails saying so."""
    proc = _start_eval(board, models, tmp_path)
    _wait_for_runner(board, proc)
    time.sleep(0.5)  # while it imports its runtime (seconds under qemu), before any batch
    for pid in board.runner_processes():
        os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert "failed" not in rows[0]
    assert "killed by a signal" in rows[1]["failed"] and "out-of-memory" in rows[1]["failed"], rows[1]["failed"]
    _assert_device_clean(board)


def test_the_host_as_a_device_gives_the_host_rows(board, models, tmp_path_factory, tmp_path):
    """No emulation: the same sshd without its chroot, the device's Python this one (ai-edge-litert). The device
    rows' drift figures then equal the host rows' exactly: the remote path adds nothing to the outputs."""
    host = device_board.start(board.root, tmp_path_factory.mktemp("host-device"), chroot=False)
    report = tmp_path / "r.json"
    try:
        proc = run_edgetool(
            "eval",
            models / "fp32.tflite",
            models / "int8.tflite",
            "-r",
            models / "model",
            "-d",
            models / "eval.npz",
            "--device",
            f"{host.url}?python={sys.executable}",
            *RUNS,
            "--json",
            report,
            env=_env(host),
        )
    finally:
        host.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(report.read_text())["results"]
    for here, there in zip(rows[:2], rows[2:]):
        assert there["device"]["runtime"] == "ai_edge_litert" and there["device"]["emulated"] is False
        assert there["device"]["machine"] == os.uname().machine
        for key in ("accuracy", "top1_agreement", "max_abs_error", "mean_abs_error", "cosine"):
            assert there[key] == here[key], key
        assert there["latency_ms"]["runs"] == 5


def test_tflm_on_devices(board, models, tmp_path_factory, tmp_path):
    """--runtime tflm with two devices: the board (no tflite_micro: PyPI has no aarch64 wheel) gives that row's
    failure with the way to get it; the host as a device (its Python has tflite_micro) gives rows whose figures
    equal the host's own --runtime tflm rows."""
    host = device_board.start(board.root, tmp_path_factory.mktemp("tflm-device"), chroot=False)
    report, local = tmp_path / "r.json", tmp_path / "local.json"
    common = (
        models / "fp32.tflite",
        models / "int8.tflite",
        "-r",
        models / "model",
        "-d",
        models / "eval.npz",
        "--runtime",
        "tflm",
        *RUNS,
    )
    try:
        env = _env_both(board, host, tmp_path)
        proc = run_edgetool(
            "eval",
            *common,
            "--device",
            board.url,
            "--device",
            f"{host.url}?python={sys.executable}",
            "--json",
            report,
            env=env,
        )
        check = run_edgetool(
            "check",
            models / "model",
            "-t",
            "tflm",
            "--device",
            f"{host.url}?python={sys.executable}",
            "--json",
            env=env,
        )
        refused = run_edgetool("check", models / "model", "-t", "tflm", "--device", board.url, env=env)
    finally:
        host.stop()
    assert check.returncode == 0, check.stdout + check.stderr
    verdict = json.loads(check.stdout)["results"][0]
    assert verdict["verdict"] == "runs" and verdict["details"]["device"]["runtime"] == "tflite_micro", verdict
    assert refused.returncode == 2 and "whl.dist" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the board's rows failed
    mine = run_edgetool("eval", *common, "--json", local)
    assert mine.returncode == 0, mine.stdout + mine.stderr
    rows, here = json.loads(report.read_text())["results"], json.loads(local.read_text())["results"]
    on_board, on_host = rows[2:4], rows[4:6]
    for row in on_board:
        assert "tflite-micro" in row["failed"] and "whl.dist" in row["failed"], row["failed"]
    for mine_row, there in zip(here, on_host):
        assert there["device"]["runtime"] == "tflite_micro" and there["runtime"].startswith("tflite-micro")
        assert there["tensor_arena"] == mine_row["tensor_arena"] and there["latency_ms"]["runs"] == 5
        for key in ("accuracy", "top1_agreement", "max_abs_error", "mean_abs_error", "cosine"):
            assert there[key] == mine_row[key], key
    _assert_device_clean(board)


def _env_both(board, other, tmp_path: Path) -> dict:
    """One ssh client config reaching both sshds (each with its own client key and host key)."""
    cfg = tmp_path / "ssh_config_both"
    cfg.write_text(
        f"Host 127.0.0.1\n  IdentityFile {board.home / 'id_ed25519'}\n  IdentityFile {other.home / 'id_ed25519'}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {board.home / 'known_hosts'} {other.home / 'known_hosts'}\n"
        "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  IdentityAgent none\n"
    )
    return {"EDGETOOL_SSH_CONFIG": str(cfg)}


_BIG = """
import sys, numpy as np, tensorflow as tf
class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([1, 256], tf.float32, name="x")])
    def __call__(self, x):  # a 400 MB intermediate tensor from a 1 KB input
        return {"y": tf.reduce_mean(tf.tile(x, [400000, 1]) * 2.0 + 1.0, axis=0, keepdims=True)}
m = M()
tf.saved_model.save(m, sys.argv[1] + "/model", signatures=m.__call__)
np.savez(sys.argv[1] + "/data.npz", x=np.random.default_rng(0).uniform(-1, 1, (3, 256)).astype("float32"))
open(sys.argv[1] + "/big.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model(sys.argv[1] + "/model").convert())
"""


def test_a_device_out_of_memory_is_that_rows_failure(board, tmp_path_factory, tmp_path):
    """A board whose processes get 600 MB of address space (its sshd under RLIMIT_AS: a smaller board) cannot
    allocate a model with a 400 MB tensor: that row fails naming memory, not a hang; the same artefact on another
    device (the host as a device) is measured; exit 1; nothing left on the board."""
    big = tmp_path_factory.mktemp("oom-model")
    made = subprocess.run([sys.executable, "-c", _BIG, str(big)], capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    small = device_board.start(board.root, tmp_path_factory.mktemp("small-board"), limit_as=600_000_000)
    host = device_board.start(board.root, tmp_path_factory.mktemp("oom-host"), chroot=False)
    report = tmp_path / "r.json"
    try:
        proc = run_edgetool(
            "eval",
            big / "big.tflite",
            "-r",
            big / "model",
            "-d",
            big / "data.npz",
            "--device",
            small.url,
            "--device",
            f"{host.url}?python={sys.executable}",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
            report,
            env=_env_both(small, host, tmp_path),
            timeout=900,
        )
    finally:
        small.stop()
        host.stop()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    here, there, elsewhere = json.loads(report.read_text())["results"]
    assert "memory" in there["failed"], there["failed"]
    assert here.get("failed") is None and elsewhere.get("failed") is None and elsewhere["latency_ms"]["runs"] == 2
    assert elsewhere["max_abs_error"] == here["max_abs_error"]
    _assert_device_clean(board)
