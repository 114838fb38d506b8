"""Re-trace a SavedModel's serving signature with a fixed input batch and save it as a new SavedModel.

Used by ``edgetool convert --batch N`` (static shapes let the converter lower Keras LSTM to TFLite's fused
``UNIDIRECTIONAL_SEQUENCE_LSTM`` and GRU/RNN loops to a builtin ``WHILE``, where a dynamic batch leaves
``TensorList`` ops the builtin set cannot express) and by ``edgetool demo --litert`` (LiteRT.js cannot run a
variable batch).

A Keras-2 SavedModel is reloaded with tf_keras and its layers are called again under the fixed input
signature, so every shape inside (the recurrent loops' TensorList element shapes too) is traced static.
Recurrent layers that would otherwise lower to a ``WHILE`` loop (GRU, SimpleRNN, a non-fused LSTM, custom
cells; not ConvLSTM, which ignores ``unroll``) are unrolled when their sequence length is static and at most
``MAX_UNROLL``: TFLite's WHILE kernel drifts from TensorFlow on a GRU (errors up to 0.4 seen), and full-integer
calibration of a WHILE loop crashes the calibrator, while the unrolled steps are plain builtin ops that convert
exactly and quantize.
The re-trace is checked against the original signature on a probe input (unrolled first, then not); when the
model does not reload as Keras, or the check fails, the original signature function is wrapped instead (its
inputs become static, shapes computed inside at save time stay as they were).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.models.signatures import SERVING, SignatureInfo, load_serving_fn, saved_model_flavor
from edge_tool.trust.guard import require_no_keras_code

PROBE_DIM = 32  # size given to unknown non-batch dims of the probe input
MAX_UNROLL = 128  # longest static sequence whose recurrent loop is unrolled (graph size grows with the length)


@dataclass(frozen=True)
class Retrace:
    """How the batch was fixed — ``"keras"`` (tf_keras layers re-traced by ``save_fixed_batch``), ``"signature"``
    (signature function wrapped) or ``"keras3"`` (a Keras-3 file exported by Keras 3 itself) — and the recurrent
    layers unrolled."""

    method: str
    unrolled: tuple[str, ...] = ()


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
        raise ModelError(
            f"--batch {batch} fixes the first (batch) dimension of every input, but "
            + "; ".join(problems)
            + ". Drop --batch, or re-export the model with a batch dimension."
        )
    return specs


def save_fixed_batch(
    saved_model: Path, out: Path, batch: int, key: str = SERVING, trust_model_code: bool = False
) -> Retrace:
    """Write a SavedModel at ``out`` whose ``serving_default`` is ``key`` of ``saved_model`` with input batch ``batch``;
    returns how it was re-traced. A model carrying code (``trust``) is refused unless ``trust_model_code``."""
    if saved_model_flavor(Path(saved_model)) == "keras2":  # the re-trace reloads it as a Keras object
        require_no_keras_code(
            Path(saved_model),
            trust_model_code,
            f"--batch {batch} re-traces its layers with a fixed batch and needs a Keras object",
            _WAY_OUT,
        )
    tf = import_tf()
    loaded, fn, info = load_serving_fn(Path(saved_model), key, trust_model_code)
    specs = fixed_input_specs(tf, info, batch)
    module, serve, how = tf.Module(), None, Retrace("signature")
    already = all(t.shape and t.shape[0] == batch for t in info.inputs)  # a stateful RNN's batch_shape, say
    if saved_model_flavor(Path(saved_model)) == "keras2" and not already:  # nothing to re-trace when already fixed
        serve, how = _keras_retrace(tf, Path(saved_model), info, specs, fn, module) or (None, how)
    if serve is None:
        module.source = loaded
        serve = tf.function(lambda inputs: fn(**inputs), input_signature=[specs])
    module.serve = serve
    tf.saved_model.save(module, str(out), signatures={SERVING: serve.get_concrete_function()})
    return how


_WAY_OUT = (
    "Otherwise re-export the model without that code (built-in layers instead of the Lambda), or drop "
    "--batch: its graph converts as it is, no Keras object needed."
)
_RETRACE_ERRORS = (ValueError, TypeError, KeyError, RuntimeError, AttributeError)


def _keras_retrace(tf, path: Path, info: SignatureInfo, specs: dict, fn, module):
    """``(tf.function calling the reloaded tf_keras model, Retrace)``, or None when it does not reproduce the
    signature. Loops that can be unrolled are tried unrolled first."""
    import tf_keras

    try:
        model = tf_keras.models.load_model(str(path), compile=False)
    except (*_RETRACE_ERRORS, tf.errors.OpError):
        return None  # not reloadable as Keras: wrap the signature instead
    if sorted(model.output_names) != sorted(t.name for t in info.outputs):
        return None
    loops = unrollable_layers(tf_keras, model)
    kernels = {id(layer): getattr(layer, "_could_use_gpu_kernel", None) for layer in loops}
    for unroll in [True, False] if loops else [False]:
        _set_unroll(loops, unroll, kernels)
        serve = _trace_keras(tf, model, info, specs)
        try:
            if _same_outputs(serve, fn, specs):
                module.variables_ = list(model.variables)  # weights only: saving the Keras object re-traces layers
                return serve, Retrace("keras", tuple(layer.name for layer in loops) if unroll else ())
        except (*_RETRACE_ERRORS, tf.errors.OpError):
            pass  # not callable like its signature (or not unrollable after all): next try, then the signature
    return None


def _trace_keras(tf, model, info: SignatureInfo, specs: dict):
    """A tf.function calling ``model`` on the fixed-shape inputs, returning ``{output name: tensor}``."""
    single = info.inputs[0].name if len(info.inputs) == 1 else None

    def call(inputs):
        y = model(inputs[single] if single else inputs, training=False)
        return dict(zip(model.output_names, y if isinstance(y, (list, tuple)) else [y]))

    return tf.function(call, input_signature=[specs])


def unrollable_layers(tf_keras, model) -> list:
    """The model's recurrent layers (nested and wrapped ones too) that lower to a WHILE loop and have a static
    sequence length of at most ``MAX_UNROLL``. A fused-kernel LSTM is left alone (it becomes TFLite's
    ``UNIDIRECTIONAL_SEQUENCE_LSTM``) unless it receives a mask, which that kernel cannot take."""
    found, masked = [], _masked_layers(model)
    for layer in model.submodules:
        if not isinstance(layer, tf_keras.layers.RNN) or layer.unroll:
            continue
        if _fused_lstm(tf_keras, layer) and id(layer) not in masked:
            continue
        if any(c.__name__ == "ConvRNN" for c in type(layer).__mro__):
            continue  # ConvLSTM1D/2D/3D ignore `unroll` (tf_keras 2.19+ calls backend.rnn without it)
        steps = _static_steps(layer)
        if steps is not None and steps <= MAX_UNROLL:
            found.append(layer)
    return found


def _masked_layers(model) -> set[int]:
    """ids of the layers that receive a Keras mask (``Embedding(mask_zero=True)``, ``Masking``) and of everything
    inside them (a Bidirectional's two LSTMs): TFLite's fused LSTM kernel takes no mask, so a masked LSTM lowers
    to a WHILE loop like any other recurrent layer."""
    found = set()
    for layer in model.submodules:
        try:
            mask = layer.input_mask
        except (AttributeError, RuntimeError, ValueError):
            continue  # not called in a functional graph, or called more than once
        masks = mask if isinstance(mask, (list, tuple)) else [mask]
        if any(m is not None for m in masks):
            found |= {id(inner) for inner in [layer, *layer.submodules]}
    return found


def _fused_lstm(tf_keras, layer) -> bool:
    return isinstance(layer, tf_keras.layers.LSTM) and bool(getattr(layer, "_could_use_gpu_kernel", False))


def _static_steps(layer) -> int | None:
    shape = getattr(layer, "_build_input_shape", None)
    try:
        dims = list(shape)
    except TypeError:
        return None  # unknown rank, or several inputs (initial states): leave the loop as it is
    if len(dims) < 3 or isinstance(dims[0], (list, tuple)):
        return None
    steps = dims[0] if getattr(layer, "time_major", False) else dims[1]
    return steps if isinstance(steps, int) else None


def _set_unroll(layers: list, unroll: bool, kernels: dict) -> None:
    """Unroll ``layers`` (or restore them); ``kernels`` holds each layer's original ``_could_use_gpu_kernel``."""
    for layer in layers:
        layer.unroll = unroll
        if kernels[id(layer)] is not None:
            layer._could_use_gpu_kernel = False if unroll else kernels[id(layer)]  # the cuDNN-style defun loops too


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
        np.allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-3, atol=1e-5) for k in want
    )
