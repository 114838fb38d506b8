"""Shared fixtures: real models trained by edgetool itself, kept tiny so the suite stays fast."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from tests import zygote

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Internal errors raise with their traceback (not the one-line exit 70 users see), in this process and in every
# edgetool subprocess the tests start, so no bug hides behind the CLI edge's guard.
os.environ["EDGETOOL_DEBUG"] = "1"

REPO = Path(__file__).resolve().parents[1]
# Every Python child the tests start imports edge_tool from this checkout (the one these tests lie in), not from an
# editable install of another checkout (a worktree's tests would run main's code); tests/zygote.py does the same.
_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO)]
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *_PATH])


# Every run below is a fork of a server that imported TensorFlow once (tests/zygote.py), unless it asks for a fresh
# process (fresh=True: a test about the import itself) or sets a variable read at import; EDGETOOL_TEST_FRESH=1
# makes every run a fresh process (to compare).
ZYGOTE = zygote.shared()


def pytest_collection_modifyitems(items: list) -> None:
    """The support-matrix rows (tests/test_stack_*.py) first: pytest-xdist hands files out in this order, and a row's
    first minutes are pip installing a venv (waiting on disk, not the CPU), which then overlaps the rest of the suite."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_stack_"))


def zygote_wanted(env: dict) -> bool:
    """True when a run with the full environment ``env`` may be a fork of the test server."""
    return os.environ.get("EDGETOOL_TEST_FRESH", "") in ("", "0") and ZYGOTE.usable_for(env)


def run_edgetool(
    *args: str, timeout: float = 900, env: dict | None = None, fresh: bool = False
) -> subprocess.CompletedProcess:
    """Run ``python -m edge_tool ARGS`` in a process of its own (fresh TF state); return the completed process.

    ``fresh=True`` starts a new interpreter (for what a fork of the test server cannot show: the import's own
    output, which modules a command imports); otherwise the run is a fork of it (tests/zygote.py).
    """
    return edgetool_process([str(a) for a in args], {**os.environ, **(env or {})}, REPO, timeout, fresh)


def edgetool_process(
    args: list[str], env: dict, cwd: Path, timeout: float, fresh: bool = False
) -> subprocess.CompletedProcess:
    """``python -m edge_tool ARGS`` with exactly ``env``, in ``cwd``: a fork of the test server when it can stand in
    for a fresh process (``zygote_wanted``), else a new interpreter."""
    if not fresh and zygote_wanted(env):
        return ZYGOTE.run(args, env, cwd, timeout)
    return subprocess.run(
        [sys.executable, "-m", "edge_tool", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


# Variables TensorFlow, Keras or Python read once, at import: an in-process run cannot honour them.
_READ_AT_IMPORT = ("TF_", "KERAS", "CUDA", "OMP_", "PYTHON", "XLA_")


def edgetool_in_process(*args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``edgetool ARGS`` in this process (Typer's CliRunner); same arguments and result shape as ``run_edgetool``.

    Saves the seconds of TensorFlow's import a fresh process pays. stdout/stderr hold what edgetool prints (rich
    and typer write to the swapped sys.stdout/sys.stderr) followed by what reached file descriptors 1 and 2
    meanwhile (TensorFlow's C++ log lines, edgetool's child processes). It does not see Python warnings (pytest
    records them) nor TensorFlow's import-time lines (imported once). So keep ``run_edgetool`` where a test
    pins the absence of such output, a signal, closed stdio, ``--help``'s laziness, process state, or needs an
    environment variable read at import (``env`` here refuses those). ``timeout`` is accepted for the same
    signature and not enforced. An internal error is raised here with its traceback (EDGETOOL_DEBUG=1).
    """
    late = sorted(k for k in (env or {}) if k.startswith(_READ_AT_IMPORT))
    if late:
        raise ValueError(f"{late} are read at import time; use run_edgetool for this run")
    cwd = os.getcwd()
    with tempfile.TemporaryFile() as fd1, tempfile.TemporaryFile() as fd2:
        saved = os.dup(1), os.dup(2)
        os.chdir(REPO)  # as run_edgetool's cwd, for relative paths
        os.dup2(fd1.fileno(), 1)
        os.dup2(fd2.fileno(), 2)
        try:
            result = CliRunner().invoke(app, [str(a) for a in args], env=env)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            os.chdir(cwd)
        raw = []
        for f in (fd1, fd2):
            f.seek(0)
            raw.append(f.read().decode("utf-8", "replace"))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception.with_traceback(result.exc_info[2])
    return subprocess.CompletedProcess(
        ["edgetool", *map(str, args)], result.exit_code, result.stdout + raw[0], result.stderr + raw[1]
    )


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """The directory ``build(dir)`` filled, built once per test run and shared by pytest-xdist's workers.

    Workers take a file lock; the first builds (a marker file says it finished), the others wait and reuse it. A
    failed build leaves no marker, so the next worker that needs it tries again (and fails the same way).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's base directory, above the workers' own
    where, done = base / f"shared-{name}", base / f"shared-{name}.built"  # the marker outside what tests list
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            build(where)
            done.touch()
    return where


@pytest.fixture(scope="session")
def digits_model(tmp_path_factory) -> Path:
    """Keras-2 SavedModel of the digits CNN trained under MirroredStrategy (2 CPU replicas), with sidecars."""

    def build(where: Path) -> None:
        proc = run_edgetool(
            "train", "--strategy", "mirrored", "--replicas", "2", "--epochs", "8", "-o", where / "model"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits", build) / "model"


@pytest.fixture(scope="session")
def digits_demo_site(digits_model, tmp_path_factory) -> Path:
    """``edgetool demo`` of digits_model (the TFJS site), built once for the browser tests that only serve it."""

    def build(where: Path) -> None:
        proc = edgetool_in_process("demo", digits_model, "-o", where / "site")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits-site", build) / "site"


@pytest.fixture(scope="session")
def digits_litert_site(digits_model, tmp_path_factory) -> Path:
    """``edgetool demo --litert`` of digits_model, built once for the browser tests that only serve it."""

    def build(where: Path) -> None:
        proc = edgetool_in_process("demo", digits_model, "-o", where / "site", "--litert")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return built_once(tmp_path_factory, "digits-litert-site", build) / "site"


_KERAS3_EXPORT_SCRIPT = """
import sys, numpy as np, keras
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Rescaling(1 / 255), keras.layers.Flatten(),
                          keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10, activation="softmax")])
from sklearn.datasets import load_digits
d = load_digits()
x = (d.images * (255 / 16)).astype("float32").reshape(-1, 8, 8, 1)
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x, d.target, epochs=3, verbose=0)
model.export(sys.argv[1])
"""

_UINT8_MODEL_SCRIPT = """
import sys, numpy as np, tf_keras as keras
from edge_tool.training.data import load_digits_split
keras.utils.set_random_seed(0)
s = load_digits_split(0)
inp = keras.Input((8, 8, 1), dtype="uint8", name="image")
x = keras.layers.Rescaling(1 / 255)(inp)  # Rescaling casts uint8 to float32 itself
x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
x = keras.layers.Flatten()(x)
out = keras.layers.Dense(10, activation="softmax")(x)
model = keras.Model(inp, out)
model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(s.x_train.astype("uint8"), s.y_train, epochs=6, batch_size=32, verbose=0)
model.save(sys.argv[1], save_format="tf")
np.savez(sys.argv[1] + "/calibration.npz", x=s.x_train[:100].astype("uint8"), y=s.y_train[:100])
np.savez(sys.argv[1] + "/eval.npz", x=s.x_eval.astype("uint8"), y=s.y_eval)
"""


def _run_script(script: str, *args, legacy_keras: bool = True) -> None:
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if legacy_keras else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="session")
def keras3_export(tmp_path_factory) -> Path:
    """A tiny Keras-3 model (float32 [None,8,8,1] → softmax 10) exported with ``model.export()``."""
    return (
        built_once(
            tmp_path_factory, "keras3", lambda d: _run_script(_KERAS3_EXPORT_SCRIPT, d / "export", legacy_keras=False)
        )
        / "export"
    )


@pytest.fixture(scope="session")
def uint8_model(tmp_path_factory) -> Path:
    """A tiny Keras-2 SavedModel whose signature takes uint8 pixels (with uint8 calibration.npz / eval.npz)."""
    return built_once(tmp_path_factory, "uint8", lambda d: _run_script(_UINT8_MODEL_SCRIPT, d / "model")) / "model"


_FLAT_MODEL_SCRIPT = """
import sys, numpy as np, tensorflow as tf
class Flat(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
        self.b = tf.Variable(np.array([0.1, -0.2, 0.05], dtype="float32"))
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
    def serve(self, features):
        return {"scores": tf.nn.softmax(tf.matmul(features, self.w) + self.b)}
m = Flat()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
open(sys.argv[1] + "/labels.txt", "w").write("setosa\\nversicolor\\nvirginica\\n")
x = np.random.default_rng(1).normal(size=(16, 4)).astype("float32")
np.savez(sys.argv[1] + "/eval.npz", x=x, y=m.serve(x)["scores"].numpy().argmax(1))
"""


@pytest.fixture(scope="session")
def flat_model(tmp_path_factory) -> Path:
    """A tiny tf.Module SavedModel: float32 'features' [None,4] -> softmax 'scores' [None,3], with labels.txt, eval.npz."""
    return built_once(tmp_path_factory, "flat", lambda d: _run_script(_FLAT_MODEL_SCRIPT, d / "model")) / "model"


def litert_outputs(path, x):
    """Independent oracle: plain LiteRT, one sample at a time, float64 outputs.

    Float inputs of an integer-input model are quantized with the model's own scale/zero-point
    (round(x / scale + zero), clipped); integer outputs are dequantized. Integer data for an
    integer-input model (raw uint8 pixels) is passed unchanged.
    """
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    inp, outp = it.get_input_details()[0], it.get_output_details()[0]
    rows = []
    for i in range(len(x)):
        sample = x[i : i + 1]
        if inp["dtype"] in (np.int8, np.uint8) and sample.dtype.kind == "f":
            s, z = inp["quantization"]
            info = np.iinfo(inp["dtype"])
            sample = np.clip(np.round(sample.astype(np.float64) / s + z), info.min, info.max)
        it.set_tensor(inp["index"], sample.astype(inp["dtype"]))
        it.invoke()
        y = it.get_tensor(outp["index"])
        if outp["dtype"] in (np.int8, np.uint8):
            s, z = outp["quantization"]
            y = (y.astype(np.float64) - z) * s
        rows.append(np.asarray(y, dtype=np.float64))
    return np.concatenate(rows)


_KERAS_FILE_SCRIPT = """
import sys, numpy as np
legacy = sys.argv[2] == "h5"
if legacy:
    import tf_keras as keras
else:
    import keras
keras.utils.set_random_seed(0)
from sklearn.datasets import load_digits
d = load_digits()
x = (d.images / 16).astype("float32").reshape(-1, 8, 8, 1)
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
                          keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(x[:1200], d.target[:1200], epochs=4, verbose=0)
model.save(sys.argv[1])
np.savez(sys.argv[1] + ".calibration.npz", x=x[:64], y=d.target[:64])
np.savez(sys.argv[1] + ".eval.npz", x=x[1200:1300], y=d.target[1200:1300])
"""


@pytest.fixture(scope="session")
def keras3_file(tmp_path_factory) -> Path:
    """A Keras-3 ``.keras`` file (digits, float32 [None,8,8,1] in 0..1 → softmax 10), with ``<file>.calibration.npz``
    and ``<file>.eval.npz`` (x, y) beside it."""
    return (
        built_once(
            tmp_path_factory,
            "keras3file",
            lambda d: _run_script(_KERAS_FILE_SCRIPT, d / "digits.keras", "keras", legacy_keras=False),
        )
        / "digits.keras"
    )


@pytest.fixture(scope="session")
def h5_file(tmp_path_factory) -> Path:
    """The same digits model built and saved by tf_keras (Keras 2) as ``.h5``, with the same two .npz beside it."""
    return built_once(tmp_path_factory, "h5file", lambda d: _run_script(_KERAS_FILE_SCRIPT, d / "digits.h5", "h5")) / (
        "digits.h5"
    )
