"""Export a Keras-3 model file (.keras) to a SavedModel in a Keras-3 child process, optionally with a fixed batch.

tf_keras (Keras 2) cannot load a Keras-3 ``.keras`` file, and this process has TensorFlow set up for tf_keras, so
the export runs in a child with ``TF_USE_LEGACY_KERAS=0``. With ``--batch N`` the child exports the
Keras model itself with every input's batch fixed (``model.export(input_signature=...)``): wrapping the exported
signature afterwards cannot make the shapes saved inside it static, and Keras 3's LSTM/GRU loops (plain
``tf.while_loop``s on CPU) then fail in the converter on their dynamic TensorList shapes. Recurrent layers of a
static length of at most ``fixed_batch.MAX_UNROLL`` are unrolled first (checked against the model on a probe
input, as ``fixed_batch`` does for Keras 2), so they convert to plain builtin ops.

The export serves ``model(x, training=False)``, not ``model.export()``'s ``model.__call__``: called without a
``training`` argument, layers whose ``call`` defaults to ``training=True`` (Keras 3's random augmentation layers:
RandomFlip, RandomRotation, ...) run in the exported graph, so the file would flip and rotate every input (and
needs Flex kernels for it). At inference they are the identity; the child names them (``inference_only``) so
convert can say they were left out. tf_keras traces its SavedModel with ``training=False`` already.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from edge_tool.core.childproc import python_command
from edge_tool.errors import ModelError
from edge_tool.models.fixed_batch import MAX_UNROLL, PROBE_DIM, Retrace
from edge_tool.trust import custom_objects
from edge_tool.trust.custom_objects import CHILD_IMPORTS

_UNKNOWN = re.compile(r"Unknown (?:layer|object|activation|loss|metric|initializer|regularizer|constraint): '([^']+)'")
_MISSING_CLASS = re.compile(r"Could not locate (?:class|function) '([^']+)'")
_CHILD = (
    CHILD_IMPORTS
    + r"""
import sys, numpy as np, keras, tensorflow as tf
src, out, batch, max_unroll, probe_dim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model = keras.models.load_model(
    src, compile=False, safe_mode=sys.argv[6] != "trust", custom_objects=_edgetool_custom_objects(sys.argv[7:])
)
import inspect
def training_only(layer):
    p = inspect.signature(layer.call).parameters.get("training")
    return p is not None and p.default is True
inactive = [f"{l.name} ({type(l).__name__})" for l in model._flatten_layers(include_self=False, recursive=True)
            if training_only(l)]
print("EDGETOOL-INACTIVE:" + ",".join(inactive))
def export(signature):
    # model.export() serves model.__call__ with no training argument, and layers whose call defaults to
    # training=True (random augmentation) then run in the exported graph: serve model(x, training=False)
    from keras.src.export.export_utils import get_input_signature
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", lambda *a: model(*a, training=False), signature or get_input_signature(model))
    archive.write_out(out, verbose=False)
structure = getattr(model, "_inputs_struct", None)
structure = model.inputs if structure is None else structure
if not batch:
    # inputs that all fix their batch (a stateful RNN's batch_shape) keep it: export's free batch breaks their loops
    sizes = {t.shape[0] if t.shape else None for t in keras.tree.flatten(structure)}
    if len(sizes) != 1 or not isinstance(next(iter(sizes)), int):
        export(None)
        sys.exit(0)
    batch = next(iter(sizes))
fixed = [t.name for t in keras.tree.flatten(structure) if t.shape and t.shape[0] not in (None, batch)]
if fixed:
    print(f"EDGETOOL: input {fixed[0]!r} already has a fixed batch other than {batch}", file=sys.stderr)
    sys.exit(3)
specs = keras.tree.map_structure(lambda t: tf.TensorSpec((batch, *t.shape[1:]), t.dtype, name=t.name), structure)
def steps(layer):
    shape = (getattr(layer, "_build_shapes_dict", None) or {}).get("sequences_shape")
    n = None if not shape or len(shape) < 3 else shape[0 if getattr(layer, "time_major", False) else 1]
    return n if isinstance(n, int) else None
loops = [l for l in model._flatten_layers(include_self=False, recursive=True)
         if isinstance(l, keras.layers.RNN) and not l.unroll and (steps(l) or max_unroll + 1) <= max_unroll]
rng = np.random.default_rng(0)
def probe(s):
    shape = [d if d is not None else probe_dim for d in s.shape]
    dtype = s.dtype.as_numpy_dtype
    return rng.uniform(0, 1, shape).astype(dtype) if s.dtype.is_floating else np.zeros(shape, dtype)
feed = keras.tree.map_structure(probe, specs)
want = [np.asarray(y) for y in keras.tree.flatten(model(feed, training=False))]
unrolled = []
if loops:
    for layer in loops:
        layer.unroll = True
    try:
        got = [np.asarray(y) for y in keras.tree.flatten(model(feed, training=False))]
        same = all(np.allclose(a, b, rtol=1e-3, atol=1e-5) for a, b in zip(got, want))
    except (ValueError, TypeError, NotImplementedError):
        same = False
    if same:
        unrolled = [layer.name for layer in loops]
    else:
        for layer in loops:
            layer.unroll = False
export([specs])
print("EDGETOOL-UNROLLED:" + ",".join(unrolled))
"""
)


def export_keras3_file(
    model: Path, out: Path, batch: int | None, keras2_error: str, trust_model_code: bool = False
) -> tuple[Retrace | None, tuple[str, ...]]:
    """Export the Keras-3 file ``model`` to a SavedModel at ``out``, served with ``training=False`` (with ``batch``:
    inputs fixed to it, loops unrolled where that is exact); returns (how the batch was fixed, or None without
    ``batch``; the layers left inactive, ``inference_only``). ModelError when Keras 3 cannot load it either
    (``keras2_error`` says why Keras 2 could not). Keras's safe mode stays on unless ``trust_model_code``."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    args = [
        str(model),
        str(out),
        str(batch or 0),
        str(MAX_UNROLL),
        str(PROBE_DIM),
        "trust" if trust_model_code else "safe",
        *custom_objects.active().specs,  # the --custom-objects modules, imported by the child before loading
    ]
    proc = subprocess.run(python_command("-c", _CHILD, *args), capture_output=True, text=True, env=env)
    if proc.returncode == 3 and batch:
        detail = proc.stderr.strip().splitlines()[-1].removeprefix("EDGETOOL: ")
        raise ModelError(
            f"--batch {batch} fixes the first (batch) dimension of every input, but {detail}. Drop "
            "--batch, or re-export the model with a batch dimension."
        )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        missing = _MISSING_CLASS.search(proc.stderr)
        if missing:
            raise ModelError(
                f"Keras 3 cannot rebuild {model}: it uses the custom class {missing.group(1)!r}, which the file "
                "stores by name only, and "
                + (
                    f"the --custom-objects modules ({', '.join(custom_objects.active().specs)}) do not define it"
                    if custom_objects.active().specs
                    else "importing its module did not define it"
                )
                + ". Give the module that defines it with --custom-objects MODULE --trust-model-code, or, where "
                "the class is defined, save the model's graph (model.export(DIR)) and give edgetool DIR: "
                "converting a SavedModel needs no Keras object."
            )
        unknown = _UNKNOWN.search(keras2_error) or _UNKNOWN.search(proc.stderr)
        hint = (
            f" The class {unknown.group(1)!r} is defined in your code, not in the file: give the module that defines "
            "it with --custom-objects MODULE (or FILE.py) --trust-model-code."
            if unknown
            else ""
        )
        raise ModelError(
            f"Expected {model} to be a Keras model file loadable by Keras 2 (tf_keras) or Keras 3, but both failed: "
            f"Keras 2 said {keras2_error[:300]}; Keras 3 said {tail[0][:300]}.{hint}"
        )
    inactive = _marked(proc.stdout, "EDGETOOL-INACTIVE:")
    return (Retrace("keras3", _marked(proc.stdout, "EDGETOOL-UNROLLED:")) if batch else None), inactive


def _marked(stdout: str, mark: str) -> tuple[str, ...]:
    """The comma list the child printed after ``mark`` (its last such line), () when none."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(mark)]
    return tuple(n for n in (lines[-1].removeprefix(mark) if lines else "").split(",") if n)
