"""``edgetool train`` under every strategy: real TF in fresh processes, tiny epochs, real exported models."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.training.launcher import free_ports
from tests.edgetool_runs import REPO, run_edgetool

runner = CliRunner()
TRAIN_SAMPLES = 1437  # 80 % of sklearn's 1,797 digits (the held-out 360 are never trained on)


def _load_and_predict(model_dir):
    """Load with tf.saved_model.load, predict held-out samples; return (probs, labels)."""
    import tensorflow as tf

    data = np.load(model_dir / "eval.npz")
    fn = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
    probs = next(iter(fn(pixels=tf.constant(data["x"][:32])).values())).numpy()
    return probs, data["y"][:32]


def _assert_valid_model(model_dir, min_accuracy: float = 0.5):
    probs, labels = _load_and_predict(model_dir)
    assert probs.shape == (32, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    assert (probs.argmax(axis=1) == labels).mean() >= min_accuracy  # better than chance (0.1) by far
    for name in ("labels.txt", "eval.npz", "calibration.npz", "train.npz", "train.json", "saved_model.pb"):
        assert (model_dir / name).is_file(), name
    held_out, train = np.load(model_dir / "eval.npz"), np.load(model_dir / "train.npz")
    assert len(held_out["x"]) >= 300 and len(train["x"]) == TRAIN_SAMPLES
    # The held-out samples are never among the training inputs.
    train_rows = {row.tobytes() for row in train["x"].reshape(len(train["x"]), -1)}
    assert not any(row.tobytes() in train_rows for row in held_out["x"].reshape(len(held_out["x"]), -1))
    assert not [p.name for p in model_dir.parent.iterdir() if p.name.startswith(".")], "temp dirs left behind"
    return json.loads((model_dir / "train.json").read_text())


def _assert_tflite_convertible(model_dir):
    import tensorflow as tf

    flatbuffer = tf.lite.TFLiteConverter.from_saved_model(str(model_dir)).convert()
    assert flatbuffer[4:8] == b"TFL3"


# --- in-process strategies ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mirrored_default_settings_model(digits_model):
    report = _assert_valid_model(digits_model, min_accuracy=0.9)
    assert report["config"]["strategy"] == "mirrored"
    assert report["num_replicas"] == 2
    assert report["eval_accuracy"] >= 0.95


@pytest.mark.slow
def test_mirrored_really_gets_n_replicas(tmp_path):
    out = tmp_path / "m3"
    proc = run_edgetool("train", "--strategy", "mirrored", "--replicas", "3", "--epochs", "1", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(3 replica(s))" in proc.stdout
    assert json.loads((out / "train.json").read_text())["num_replicas"] == 3
    _assert_valid_model(out)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["default", "one-device"])
def test_single_device_strategies(tmp_path, strategy):
    out = tmp_path / strategy
    proc = run_edgetool("train", "--strategy", strategy, "--epochs", "1", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "epoch 1:" in proc.stdout and "held-out accuracy" in proc.stdout
    assert _assert_valid_model(out)["num_replicas"] == 1


# --- multiworker ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_multiworker_runs_two_worker_processes(tmp_path):
    out = tmp_path / "mw"
    proc = run_edgetool("train", "--strategy", "multiworker", "--workers", "2", "--epochs", "1", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "epoch 1:" in proc.stdout and "2 worker processes" in proc.stdout  # the chief's lines, streamed
    report = _assert_valid_model(out)
    workers = report["workers"]
    assert sorted(w["task_index"] for w in workers) == [0, 1]
    assert len({w["pid"] for w in workers}) == 2 and os.getpid() not in {w["pid"] for w in workers}
    assert [w["is_chief"] for w in sorted(workers, key=lambda w: w["task_index"])] == [True, False]
    steps = math.ceil(TRAIN_SAMPLES / 64)  # every worker ran every global step (on its half of each batch)
    assert all(w["local_train_batches"] == steps and w["num_replicas"] == 2 for w in workers)
    assert report["num_replicas"] == 2 and report["shard_policy"] == "DATA"
    _assert_tflite_convertible(out)


@pytest.mark.slow
def test_multiworker_failing_worker_stops_all_and_writes_nothing(tmp_path):
    out = tmp_path / "mw-fail"
    proc = run_edgetool(
        "train",
        "--strategy",
        "multiworker",
        "--workers",
        "2",
        "--epochs",
        "3",
        "-o",
        out,
        env={"EDGETOOL_FAIL_WORKER": "1"},
    )  # worker 1 raises after epoch 1; worker 0 waits on it
    assert proc.returncode == 2
    assert "multiworker training failed: worker 1" in proc.stderr
    assert "injected failure in worker 1" in proc.stderr  # its stderr tail is in the message
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temp dir left beside the target


@pytest.mark.slow
def test_multiworker_joins_a_user_tf_config_cluster(tmp_path):
    """Two `edgetool train` processes, each given TF_CONFIG by the user: the chief writes -o, the other nothing."""
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for i in range(2):
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})}
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "edge_tool",
                    "train",
                    "--strategy",
                    "multiworker",
                    "--epochs",
                    "1",
                    "-o",
                    str(tmp_path / f"out{i}"),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=REPO,
            )
        )
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [r[1][-1500:] for r in results]
    assert "SavedModel at" in results[0][0]
    assert "the chief writes the SavedModel" in results[1][0]
    assert not (tmp_path / "out1").exists()
    report = _assert_valid_model(tmp_path / "out0")
    assert report["workers"][0]["task_index"] == 0 and report["num_replicas"] == 2


def test_bad_tf_config_is_a_usage_error(tmp_path):
    out = tmp_path / "m"
    result = runner.invoke(app, ["train", "--strategy", "multiworker", "-o", str(out)], env={"TF_CONFIG": "{nope"})
    assert result.exit_code == 2
    assert "TF_CONFIG is not valid JSON" in result.output
    assert not out.exists()


# --- parameter server -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_parameter_server_trains_and_exports(tmp_path):
    out = tmp_path / "ps"
    proc = run_edgetool("train", "--strategy", "parameter-server", "--workers", "2", "--epochs", "3", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "epoch 3:" in proc.stdout and "2 worker(s) + 1 ps" in proc.stdout
    report = _assert_valid_model(out, min_accuracy=0.6)
    assert len(report["cluster"]["worker"]) == 2 and len(report["cluster"]["ps"]) == 1
    assert report["variable_devices"] == ["/job:ps/replica:0/task:0/device:CPU:0"]  # trained on the ps
    assert report["eval_accuracy"] >= 0.6
    _assert_tflite_convertible(out)


# --- option errors: exit 2, one message, nothing written ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replicas", "0"], "--replicas must be between 1 and 8, got 0"),
        (["--strategy", "multiworker", "--workers", "0"], "--workers must be between 1 and 8"),
        (["--strategy", "parameter-server", "--workers", "9"], "--workers must be between 1 and 8"),
        (["--strategy", "default", "--replicas", "2"], "--replicas applies to --strategy mirrored only"),
        (["--strategy", "mirrored", "--workers", "2"], "--workers applies to --strategy multiworker"),
        (["--replicas", "4", "--batch-size", "3"], "--batch-size 3 cannot be split across 4 replicas"),
        (["--strategy", "bogus"], "bogus"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "m"
    result = runner.invoke(app, ["train", "-o", str(out), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


def test_all_problems_reported_at_once(tmp_path):
    result = runner.invoke(
        app, ["train", "-o", str(tmp_path / "m"), "--replicas", "0", "--epochs", "0", "--strategy", "default"]
    )
    assert result.exit_code == 2
    for text in ("--replicas applies to", "--replicas must be between", "--epochs must be >= 1"):
        assert text in result.output


@pytest.mark.parametrize("strategy", ["mirrored", "multiworker", "parameter-server"])
def test_non_empty_output_needs_force(tmp_path, strategy):
    out = tmp_path / "m"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["train", "--strategy", strategy, "-o", str(out)])
    assert result.exit_code == 2
    assert "already exists and is not empty; pass --force" in result.output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
