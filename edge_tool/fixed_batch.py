"""Re-trace a SavedModel's serving signature with a fixed input batch and save it as a new SavedModel.

Used by ``edgetool convert --batch N`` (static shapes let the converter lower Keras LSTM to TFLite's fused
``UNIDIRECTIONAL_SEQUENCE_LSTM`` and GRU/RNN loops to a builtin ``WHILE``, where a dynamic batch leaves
``TensorList`` ops the builtin set cannot express) and by ``edgetool demo --litert`` (LiteRT.js cannot run a
variable batch).

A Keras-2 SavedModel is reloaded with tf_keras and its layers are called again under the fixed input
signature, so every shape inside (the recurrent loops' TensorList element shapes too) is traced static. The
re-trace is checked against the original signature on a probe input; when the model does not reload as
Keras, or the check fails, the original signature function is wrapped instead (its inputs become static,
shapes computed inside at save time stay as they were).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import ModelError
from edge_tool.modelio import SERVING, SignatureInfo, load_serving_fn, saved_model_flavor

PROBE_DIM = 32  # size given to unknown non-batch dims of the probe input


def fixed_input_specs(tf, info: SignatureInfo, batch: int) -> dict:
    """``{input name: TensorSpec}`` with the batch dim set to ``batch``; ModelError when an input cannot take it."""
    problems, specs = [], {}
    for t in info.inputs:
        if t.shape is None or len(t.shape) == 0:
            what = "has an unknown rank" if t.shape is None else "is a scalar (no batch dimension)"
            problems.append(f"input {t.name!r} {what}")
        elif t.shape[0] is not None and t.shape[0] != batch:
            problems.append(f"input {t.name!r} already has a fixed batch of {t.shape[0]} (shape {list(t.shape)})")
        else:
            specs[t.name] = tf.TensorSpec([batch, *t.shape[1:]], tf.as_dtype(t.dtype), name=t.name)
    if problems:
        raise ModelError(f"--batch {batch} fixes the first (batch) dimension of every input, but "
                         + "; ".join(problems) + ". Drop --batch, or re-export the model with a batch dimension.")
    return specs


def save_fixed_batch(saved_model: Path, out: Path, batch: int, key: str = SERVING) -> str:
    """Write a SavedModel at ``out`` whose ``serving_default`` is ``key`` of ``saved_model`` with input batch ``batch``.

    Returns how it was re-traced: ``"keras"`` (layers re-traced) or ``"signature"`` (signature function wrapped).
    """
    from edge_tool.env import import_tf  # noqa: PLC0415

    tf = import_tf()
    loaded, fn, info = load_serving_fn(Path(saved_model), key)
    specs = fixed_input_specs(tf, info, batch)
    method, module, serve = "signature", tf.Module(), None
    if saved_model_flavor(Path(saved_model)) == "keras2":
        serve = _keras_retrace(tf, Path(saved_model), info, specs, fn, module)
        method = "keras" if serve is not None else method
    if serve is None:
        module.source = loaded
        serve = tf.function(lambda inputs: fn(**inputs), input_signature=[specs])
    module.serve = serve
    tf.saved_model.save(module, str(out), signatures={SERVING: serve.get_concrete_function()})
    return method


def _keras_retrace(tf, path: Path, info: SignatureInfo, specs: dict, fn, module):
    """A tf.function calling the reloaded tf_keras model, or None when it does not reproduce the signature."""
    import tf_keras  # noqa: PLC0415

    try:
        model = tf_keras.models.load_model(str(path), compile=False)
        out_names = [t.name for t in info.outputs]
        if sorted(model.output_names) != sorted(out_names):
            return None
        single = info.inputs[0].name if len(info.inputs) == 1 else None

        def call(inputs):
            y = model(inputs[single] if single else inputs, training=False)
            return dict(zip(model.output_names, y if isinstance(y, (list, tuple)) else [y]))

        serve = tf.function(call, input_signature=[specs])
        if not _same_outputs(serve, fn, specs):
            return None
    except (ValueError, TypeError, KeyError, RuntimeError, AttributeError, tf.errors.OpError):
        return None  # not reloadable as Keras, or not callable like its signature: wrap the signature instead
    module.variables_ = list(model.variables)  # track the weights only: saving the Keras object re-traces every layer
    return serve


def _same_outputs(serve, fn, specs: dict) -> bool:
    """True when ``serve`` and the original signature ``fn`` agree on a seeded probe input."""
    rng = np.random.default_rng(0)
    probe = {}
    for name, spec in specs.items():
        shape = [d if d is not None else PROBE_DIM for d in spec.shape.as_list()]
        dtype = spec.dtype.as_numpy_dtype
        if np.issubdtype(dtype, np.floating):
            probe[name] = rng.uniform(0, 1, shape).astype(dtype)
        else:
            probe[name] = np.zeros(shape, dtype)  # 0 is a valid id for embeddings and lookups
    got, want = serve(probe), fn(**probe)
    return set(got) == set(want) and all(
        np.allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-3, atol=1e-5) for k in want)
