"""One row of the support matrix, as a user gets it: the built wheel installed with plain pip into a fresh venv of that
row's Python and TensorFlow, then the real commands in it (train, every TFLite mode, QAT, TFJS, ONNX, micro, eval,
check, demo in Chromium) and a model trained with that row's own TensorFlow (Keras 3 ``export()`` and ``.keras``).

The venv is built once per (row, the wheel's declared dependencies, the row's constraints file) and cached under
``~/.cache/edgetool/stack/`` (``EDGETOOL_STACK_CACHE`` overrides): a first run pays pip's ~1.5 GB install, later runs
only reinstall edgetool itself from the new wheel (``--no-deps --force-reinstall``). The row's pins are
``scripts/constraints/tf<TF>-py<PY>.txt``, the file ``EDGETOOL_TF=... EDGETOOL_PYTHON=... scripts/setup.sh`` uses.
Each row has its own test file (tests/test_stack_*.py), so pytest-xdist runs the rows beside the rest of the suite.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.builds import built_once
from tests.edgetool_runs import REPO
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated
from tests.test_wheel import _build, _copy_checkout, _page_predicts_like_litert

TFLITE_MODES = ("fp32", "fp16", "dynamic", "int8", "int16x8")
CACHE = Path(os.environ.get("EDGETOOL_STACK_CACHE", Path.home() / ".cache" / "edgetool" / "stack"))


@dataclass(frozen=True)
class Row:
    """A (TensorFlow, Python) row with its venv, and the work directory its commands run in (outside the repo)."""

    tf: str
    python: str
    venv: Path
    work: Path

    @property
    def name(self) -> str:
        return f"tf{self.tf}-py{self.python}"

    def env(self) -> dict:
        """The user's environment: this venv first on PATH (node stays reachable for tfjs rows), no PYTHONPATH."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TF_USE_LEGACY_KERAS")}
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '')}"
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        return env

    def run(self, *args, timeout: float = 900) -> subprocess.CompletedProcess:
        """``edgetool ARGS`` from this venv's console script; asserts exit 0 with the output in the message."""
        proc = subprocess.run(
            [str(self.venv / "bin" / "edgetool"), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
            cwd=self.work,
        )
        assert proc.returncode == 0, f"[{self.name}] edgetool {' '.join(map(str, args))}\n{proc.stdout}{proc.stderr}"
        return proc

    def python_run(self, code: str, *args) -> str:
        proc = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", code, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=900,
            env=self.env(),
            cwd=self.work,
        )
        assert proc.returncode == 0, f"[{self.name}] {proc.stdout}{proc.stderr[-4000:]}"
        return proc.stdout


def find_python(version: str) -> str:
    """The interpreter for ``version`` (3.12): python3.12 on PATH, else pyenv's, as scripts/setup.sh looks."""
    candidates = [
        shutil.which(f"python{version}"),
        *sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python{version}"))),
    ]
    for cand in filter(None, candidates):
        out = subprocess.run(
            [cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        )
        if out.stdout.strip() == version:
            return cand
    raise AssertionError(f"Python {version} not found (python{version} on PATH or ~/.pyenv/versions/{version}.*)")


def install_row(tf: str, python: str, wheel: Path, work: Path) -> Row:
    """The row's venv from the cache (built with plain pip from ``wheel`` on a miss), edgetool from ``wheel``.

    The caller holds ``row_lock(tf, python)`` for as long as it uses the venv: another test run on this machine (a
    second checkout) waits instead of reinstalling edgetool under it."""
    constraints = REPO / "scripts" / "constraints" / f"tf{tf}-py{python}.txt"
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    requires = sorted(
        line for line in zipfile.ZipFile(wheel).read(meta).decode().splitlines() if line.startswith("Requires-")
    )
    key = hashlib.sha256("\n".join([*requires, constraints.read_text()]).encode()).hexdigest()[:16]
    venv = CACHE / f"tf{tf}-py{python}-{key}"
    done = venv / ".edgetool-complete"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not done.exists():
        for stale in CACHE.glob(f"tf{tf}-py{python}-*"):  # this key half-built, or an older key: its deps changed
            shutil.rmtree(stale, ignore_errors=True)
        subprocess.run([find_python(python), "-m", "venv", str(venv)], check=True)
        _pip(pip + ["-c", str(constraints), f"edgetool[onnx] @ {wheel.as_uri()}"])
        done.touch()
    _pip(pip + ["--no-deps", "--force-reinstall", str(wheel)])
    work.mkdir(parents=True, exist_ok=True)
    row = Row(tf, python, venv, work)
    versions = row.python_run(
        "import sys, tensorflow as tf; print('%d.%d' % sys.version_info[:2], tf.__version__)"
    ).split()
    assert versions[0] == python and versions[1].startswith(tf + "."), versions
    return row


@contextlib.contextmanager
def row_lock(tf: str, python: str):
    """An exclusive lock on the row's cached venvs, across processes."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"tf{tf}-py{python}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _pip(cmd: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def train(row: Row) -> Path:
    """edgetool train under MirroredStrategy with the row's TensorFlow (a tf_keras SavedModel, ``model.save``)."""
    row.run("train", "--strategy", "mirrored", "--replicas", "2", "--epochs", "4", "-o", row.work / "model")
    return row.work / "model"


_KERAS3 = """
import sys, numpy as np, keras
out, data = sys.argv[1], np.load(sys.argv[2])
assert keras.__version__.startswith("3."), keras.__version__
x, y = data["x"].astype("float32"), data["y"]
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input(x.shape[1:]), keras.layers.Conv2D(8, 3, activation="relu"),
                      keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
m.fit(x, y, epochs=8, batch_size=32, verbose=0)
m.export(out + "/keras3_export")
m.save(out + "/keras3.keras")
np.save(out + "/keras3_probs.npy", m.predict(x[:32], verbose=0))
"""


def train_keras3(row: Row, data: Path) -> Path:
    """A Keras 3 model trained and exported (``model.export()``, and ``.keras``) by the row's own TensorFlow."""
    row.python_run(_KERAS3, row.work, data)
    return row.work / "keras3_export"


def eval_json(row: Row, artefacts: list[Path], reference: Path, data: Path, name: str, *extra) -> dict:
    """``edgetool eval`` of ``artefacts`` against ``reference``; the JSON report, schema-checked."""
    report = row.work / f"{name}.json"
    row.run("eval", *artefacts, "--reference", reference, "--data", data, "--runs", "3", "--json", report, *extra)
    return validated(report, "eval")


def assert_close_to_reference(doc: dict, floors: dict[str, float]) -> None:
    """Every row's top-1 agreement with the reference at least its mode's floor; fp32 numerically equal."""
    for r in doc["results"]:
        mode = r["quant"].split()[0]
        assert r["top1_agreement"] >= floors[mode], (r["artifact"], r["top1_agreement"])
        if mode == "fp32":
            assert r["max_abs_error"] < 1e-4, (r["artifact"], r["max_abs_error"])


def fp32_matches_row_tf(row: Row, tflite: Path, reference: Path, data: Path) -> None:
    """The row's fp32 .tflite, run by this environment's LiteRT, equals the row's TensorFlow on its SavedModel."""
    x = np.load(data)["x"][:16].astype(np.float32)
    np.save(row.work / "x16.npy", x)
    code = (
        "import sys, json, numpy as np, tensorflow as tf\n"
        "m = tf.saved_model.load(sys.argv[1]); f = m.signatures['serving_default']\n"
        "x = np.load(sys.argv[2]); (name, spec), = f.structured_input_signature[1].items()\n"
        "out = f(**{name: tf.constant(x, spec.dtype)}); (y,) = out.values()\n"
        "np.save(sys.argv[3], y.numpy())"
    )
    row.python_run(code, reference, row.work / "x16.npy", row.work / "tf16.npy")
    np.testing.assert_allclose(litert_outputs(tflite, x), np.load(row.work / "tf16.npy"), atol=1e-4)


def manifest_versions(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())["versions"]


FLOORS = {"fp32": 0.99, "fp16": 0.99, "dynamic": 0.97, "int8": 0.95, "int16x8": 0.97, "qat": 0.9}


def row_tests(tf: str, python: str) -> dict:
    """The fixtures and tests of one row, for a tests/test_stack_*.py file to take into its namespace."""

    @pytest.fixture(scope="module")
    def row(tmp_path_factory):
        def build(where: Path) -> None:
            proc = _build(_copy_checkout(where / "src", with_vendor=True), where / "dist")
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

        [wheel] = (built_once(tmp_path_factory, "stack-wheel", build) / "dist").glob("edgetool-*.whl")
        with row_lock(tf, python):
            yield install_row(tf, python, wheel, tmp_path_factory.mktemp(f"stack-tf{tf}-py{python}") / "work")

    @pytest.fixture(scope="module")
    def model(row) -> Path:
        return train(row)

    @pytest.fixture(scope="module")
    def tflite(row, model) -> Path:
        """Every TFLite mode and QAT of the trained model, converted by the row's TensorFlow."""
        out = row.work / "tflite"
        modes = ",".join((*TFLITE_MODES, "qat"))
        row.run("convert", model, "--quant", modes, "--train-data", model / "train.npz", "--qat-epochs", "1", "-o", out)
        return out

    def test_every_tflite_mode_and_qat_match_the_reference(row, model, tflite):
        assert manifest_versions(tflite)["tensorflow"].startswith(tf + ".")
        files = [tflite / f"model_{m}.tflite" for m in (*TFLITE_MODES, "qat")]
        doc = eval_json(row, files, model, model / "eval.npz", "eval-tflite", "--max-drop", "0.05")
        assert len(doc["results"]) == 6
        assert_close_to_reference(doc, FLOORS)
        fp32_matches_row_tf(row, tflite / "model_fp32.tflite", model, model / "eval.npz")

    def test_tfjs_eval_and_the_demo_in_chromium(row, model, tflite):
        row.run("convert", model, "--format", "tfjs", "-o", row.work / "web")
        doc = eval_json(row, [row.work / "web" / "tfjs"], model, model / "eval.npz", "eval-tfjs")
        assert_close_to_reference(doc, {"fp32": 0.99})
        row.run("demo", row.work / "web" / "tfjs", "-o", row.work / "site")
        _page_predicts_like_litert(row.venv, row.work, row.work / "site", tflite / "model_fp32.tflite", model)

    def test_onnx_and_micro(row, model):
        row.run("convert", model, "--format", "onnx", "--quant", "fp32,int8", "-o", row.work / "onnx")
        doc = eval_json(row, sorted((row.work / "onnx").glob("*.onnx")), model, model / "eval.npz", "eval-onnx")
        assert [r["format"] for r in doc["results"]] == ["onnx", "onnx"]
        assert_close_to_reference(doc, FLOORS)
        row.run("convert", model, "--format", "micro", "--quant", "int8", "-o", row.work / "micro")
        doc = eval_json(
            row, [row.work / "micro" / "model_int8.tflite"], model, model / "eval.npz", "eval-tflm", "--runtime", "tflm"
        )
        assert_close_to_reference(doc, FLOORS)

    def test_check_every_target(row, model):
        report = json.loads(row.run("check", model, "--target", "all", "--json").stdout)
        verdicts = {r["target"]: r for r in report["results"]}
        assert {"litert-cpu", "gpu", "tflm", "tfjs", "litertjs", "edgetpu"} <= set(verdicts), sorted(verdicts)
        assert not report["failed"], report["failed"]

    def test_a_keras3_model_trained_by_the_rows_tensorflow(row, model):
        """Keras 3 ``export()`` and ``.keras`` from the row's own TensorFlow: every TFLite mode + TFJS, eval, demo."""
        exported = train_keras3(row, model / "train.npz")
        out, data = row.work / "k3", model / "eval.npz"
        row.run(
            "convert", exported, "--format", "all", "--quant", ",".join(TFLITE_MODES), "--calibration", data, "-o", out
        )
        files = [out / f"keras3_export_{m}.tflite" for m in TFLITE_MODES]
        doc = eval_json(row, [*files, out / "tfjs"], exported, data, "eval-k3", "--max-drop", "0.05")
        assert len(doc["results"]) == 6
        assert_close_to_reference(doc, FLOORS)
        fp32_matches_row_tf(row, out / "keras3_export_fp32.tflite", exported, data)
        row.run("demo", out / "tfjs", "-o", row.work / "k3-site")
        assert (row.work / "k3-site" / "index.html").is_file()
        row.run(
            "convert", row.work / "keras3.keras", "--quant", "fp32,int8", "--calibration", data, "-o", row.work / "k3k"
        )
        doc = eval_json(row, sorted((row.work / "k3k").glob("*.tflite")), exported, data, "eval-k3k")
        assert_close_to_reference(doc, FLOORS)

    return {
        "pytestmark": [pytest.mark.slow, pytest.mark.browser],
        "row": row,
        "model": model,
        "tflite": tflite,
        **{
            f.__name__: f
            for f in (
                test_every_tflite_mode_and_qat_match_the_reference,
                test_tfjs_eval_and_the_demo_in_chromium,
                test_onnx_and_micro,
                test_check_every_target,
                test_a_keras3_model_trained_by_the_rows_tensorflow,
            )
        },
    }
