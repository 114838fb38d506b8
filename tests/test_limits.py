"""In-process checks of the read and allocation guards: regular files only (calibration.safe_open), the tensor and
size limits (edge_tool.parsers.limits), the TFJS manifest validation (edge_tool.parsers.tfjs_manifest) and the multiworker peer
wait (edge_tool.training.peers). The CLI-level cases are in tests/hostile/test_hostile_crashes.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading

import pytest

from edge_tool.calibration.safe_open import not_a_file, open_regular, read_regular
from edge_tool.calibration.spec import TensorSpec
from edge_tool.errors import ModelError, UsageError
from edge_tool.parsers.limits import TENSOR_ENV, check_specs, tensor_bytes
from edge_tool.parsers.tfjs_manifest import check_manifest
from edge_tool.training.peers import wait_for_peers


@pytest.fixture
def alarm():
    """Fail instead of hanging if a FIFO is ever opened for a blocking read."""
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("blocked on a FIFO"))
    signal.alarm(20)
    yield
    signal.alarm(0)


def test_fifo_device_and_directory_are_refused_without_blocking(tmp_path, alarm):
    os.mkfifo(tmp_path / "x.tflite")
    (tmp_path / "d").mkdir()
    for path, kind in (
        (tmp_path / "x.tflite", "FIFO"),
        ("/dev/zero", "character device"),
        (tmp_path / "d", "directory"),
    ):
        with pytest.raises(ModelError, match=kind):
            read_regular(path, "a .tflite file", ModelError, 100)
        with pytest.raises(ModelError, match=kind):
            open_regular(path, "a .tflite file", ModelError)
        assert kind in not_a_file(path)
    assert "does not exist" in not_a_file(tmp_path / "nope") and not_a_file(None) is None


def test_read_regular_checks_the_size_before_reading(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(1 << 40)  # sparse: 1 TiB declared, nothing on disk
    with pytest.raises(UsageError, match="1,099,511,627,776 bytes, over the 1,000-byte limit"):
        read_regular(path, "a document", UsageError, 1000)
    path.write_bytes(b"12345")
    assert read_regular(path, "a document", UsageError, 5) == b"12345"


def test_tensor_limit_names_the_input_and_honours_the_env(monkeypatch):
    assert tensor_bytes((None, 4), "float32") == 16 and tensor_bytes((1, 100000, 100000, 3), "float32") == 120 * 10**9
    big = TensorSpec("image", "float32", (1, 100000, 100000, 3))
    with pytest.raises(ModelError, match=r"'image' of shape \(1, 100000, 100000, 3\) float32 needs 120,000,000,000"):
        check_specs([big])
    monkeypatch.setenv(TENSOR_ENV, str(200 * 10**9))
    check_specs([big])
    monkeypatch.setenv(TENSOR_ENV, "-3")
    with pytest.raises(UsageError, match=TENSOR_ENV):
        check_specs([big])


def _tfjs_dir(tmp_path, weights, shard: bytes):
    (tmp_path / "group1-shard1of1.bin").write_bytes(shard)
    doc = {"format": "graph-model", "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": weights}]}
    (tmp_path / "model.json").write_text(json.dumps(doc))
    return doc


W = {"name": "w", "shape": [4, 3], "dtype": "float32"}


@pytest.mark.parametrize(
    "weights,shard,needle",
    [
        ([W], bytes(48), None),
        ([W, {**W, "name": "q", "quantization": {"dtype": "uint8", "scale": 1, "min": 0}}], bytes(60), None),
        ([W, 5], bytes(48), "not an object"),
        ([{**W, "shape": [10**12, 10**12]}], bytes(48), "needs 4,000,000,000,000,000,000,000,000 bytes"),
        ([{**W, "shape": [float("nan"), 3]}], bytes(48), "nan"),
        ([{**W, "shape": [-1, 3]}], bytes(48), "non-negative"),
        ([W, W], bytes(96), "appears twice"),
        ([W], bytes(40), "hold 40 bytes"),
        ([W], bytes(56), "hold 56 bytes"),
        ([{**W, "dtype": "float64"}], bytes(96), "'float64'"),
        ([{**W, "quantization": {"dtype": "int4"}}], bytes(12), "'int4'"),
    ],
)
def test_manifest_validation(tmp_path, weights, shard, needle):
    doc = _tfjs_dir(tmp_path, weights, shard)
    if needle is None:
        check_manifest(tmp_path, doc)
        return
    with pytest.raises(ModelError, match="model.json") as exc:
        check_manifest(tmp_path, doc)
    assert needle in str(exc.value)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _info(ports, index):
    return {"cluster": {"worker": [f"localhost:{p}" for p in ports]}, "task_type": "worker", "task_index": index}


def test_peer_wait_names_the_silent_worker():
    ports = (_port(), _port())
    with pytest.raises(UsageError, match=f"worker 1 at localhost:{ports[1]}.*within 0.5 s"):
        wait_for_peers(_info(ports, 0), 0.5)


def test_peers_started_apart_find_each_other():
    ports, errors = (_port(), _port()), []

    def task(index: int) -> None:
        try:
            wait_for_peers(_info(ports, index), 20)
        except Exception as exc:
            errors.append(exc)

    first = threading.Thread(target=task, args=(0,))
    first.start()
    threading.Event().wait(1.0)  # the second task starts a second later
    task(1)
    first.join(30)
    assert not errors and not first.is_alive()
