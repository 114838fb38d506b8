"""Things the tests build once per run: ``built_once`` shares a built directory across pytest-xdist's workers, and
``run_script`` builds a model with a Python snippet in a process of its own (its Keras, its environment)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.edgetool_runs import REPO


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


def run_script(script: str, *args, legacy_keras: bool = True) -> None:
    """Run the Python ``script`` with ``args`` in a new interpreter in the repository (Keras 2 unless told); assert
    it succeeded."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if legacy_keras else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


# A SavedModel whose graph Const declares 3 GiB without holding it (a splat: one value for the declared shape);
# the script takes the output directory. Shared by the declared-size refusal and the 2 GiB flatbuffer refusal tests.
SPLAT_SAVED_MODEL = """
import sys
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": x + tf.constant([1.0, 2.0, 3.0, 4.0])}

m = M()
tf.saved_model.save(m, sys.argv[1], signatures=m.__call__)
pb = sys.argv[1] + "/saved_model.pb"
sm = saved_model_pb2.SavedModel()
sm.ParseFromString(open(pb, "rb").read())
for fn in sm.meta_graphs[0].graph_def.library.function:
    for node in fn.node_def:
        t = node.attr["value"].tensor
        if node.op == "Const" and t.dtype == 1 and [d.size for d in t.tensor_shape.dim] == [4]:
            t.ClearField("tensor_content")
            del t.float_val[:]
            t.float_val.append(1.0)  # a splat: one value for the whole (declared) shape
            t.tensor_shape.dim[0].size = 3 * (1 << 30) // 4
open(pb, "wb").write(sm.SerializeToString())
"""
