"""Mixed-precision models (Keras ``mixed_float16`` / ``mixed_bfloat16``) recast to float32 for conversion.

A model trained under a mixed policy keeps float32 variables but computes in float16 (or bfloat16): its serving
graph holds ``Conv2D``/``MatMul``/``FusedBatchNormV3``… with ``T=half``. The TFLite builtin op set has no float16
compute kernels (its fp16 mode is float16 *weights*, computed in float32), the Flex kernels abort LiteRT on the
mixed dtypes, and QAT's wrappers compute in float32. The known technique is to compute in float32 with the same
weights: ``cast_saved_model`` freezes the chosen signature (the variables are float32 already), rewrites every
float16/bfloat16 type and constant of its graph and functions to float32 (the policy's casts become float32 →
float32 no-ops) and saves that as a SavedModel with the same signature; ``float32_keras_model`` rebuilds a Keras
model under the float32 policy with the same weights (for QAT, which needs Keras layers).

The recast model is not the one the user trained: ``cast_saved_model`` measures how far its outputs are from the
mixed-precision model on seeded random inputs, and the manifest says so (``source.precision``); ``eval``'s
reference stays the model as trained (float16 compute), so the drift it reports includes the cast.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.models.signatures import SERVING, read_meta_graph
from edge_tool.schemas.records import PrecisionCast
from edge_tool.trust.reach import subgraph

_LOW = {19: "float16", 14: "bfloat16"}  # DataType enum values: DT_HALF, DT_BFLOAT16
_FLOAT = 1  # DT_FLOAT
# Ops that only move or convert a low-precision value (a mixed policy's casts, reads): not "computes in float16".
_MOVES = frozenset({"Cast", "Identity", "IdentityN", "Const", "ReadVariableOp", "Placeholder", "NoOp"})
PROBE_SAMPLES = 8


def _signature_nodes(mg, key: str):
    """Every NodeDef the signature ``key`` runs: graph ancestors of its outputs and every function they call
    (``trust.reach.subgraph``, the walk the model-code scan judges by), in name order."""
    sig = mg.signature_def.get(key)
    seen, called = subgraph(mg, [t.name for t in sig.outputs.values()] if sig is not None else [])
    nodes = {n.name: n for n in mg.graph_def.node}
    functions = {f.signature.name: f for f in mg.graph_def.library.function}
    for name in sorted(seen):
        yield nodes[name]
    for fname in sorted(called & functions.keys()):
        yield from functions[fname].node_def


def _low_dtype(node) -> str | None:
    for value in node.attr.values():
        if value.type in _LOW:
            return _LOW[value.type]
        if value.HasField("list") and any(t in _LOW for t in value.list.type):
            return next(_LOW[t] for t in value.list.type if t in _LOW)
    return None


def low_precision_ops(saved_model: Path, key: str = SERVING) -> tuple[str | None, tuple[str, ...]]:
    """(``"float16"``/``"bfloat16"`` or None, the compute ops of signature ``key`` that run in it), read from the
    SavedModel's protobuf; nothing is loaded."""
    dtype, ops = None, set()
    for node in _signature_nodes(read_meta_graph(Path(saved_model)), key):
        low = _low_dtype(node)
        if low and node.op not in _MOVES:
            dtype = dtype or low
            ops.add(node.op)
    return dtype, tuple(sorted(ops))


def _retype(attr_map) -> None:
    import tensorflow as tf

    for value in attr_map.values():
        if value.type in _LOW:
            value.type = _FLOAT
        if value.HasField("list") and any(t in _LOW for t in value.list.type):
            types = [_FLOAT if t in _LOW else t for t in value.list.type]
            del value.list.type[:]
            value.list.type.extend(types)
        if value.HasField("tensor") and value.tensor.dtype in _LOW:
            array = tf.make_ndarray(value.tensor).astype(np.float32)
            value.tensor.CopyFrom(tf.make_tensor_proto(array, dtype=tf.float32))


def _to_float32(graph_def) -> None:
    """Rewrite every float16/bfloat16 type, argument and constant of ``graph_def`` (and its library) to float32."""
    for node in graph_def.node:
        _retype(node.attr)
    for fn in graph_def.library.function:
        for node in fn.node_def:
            _retype(node.attr)
        for arg in [*fn.signature.input_arg, *fn.signature.output_arg]:
            if arg.type in _LOW:
                arg.type = _FLOAT
        for attrs in fn.arg_attr.values():
            _retype(attrs.attr)


def _frozen_float32(tf, fn):
    """(the float32 GraphDef of signature function ``fn`` with its variables as constants, its input tensor names
    by argument, its output tensor names by output key)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    graph_def = frozen.graph.as_graph_def()
    _to_float32(graph_def)
    arg_names = sorted(fn.structured_input_signature[1])
    inputs = dict(zip(arg_names, (t.name for t in frozen.inputs[: len(arg_names)])))
    out_keys = sorted(fn.structured_outputs)
    outputs = dict(zip(out_keys, (t.name for t in frozen.outputs)))
    return graph_def, inputs, outputs


def _serve_graph_def(tf, graph_def, inputs: dict, outputs: dict, specs: dict):
    """A tf.function with signature ``specs`` running ``graph_def`` from ``inputs`` to ``outputs``."""
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    names = sorted(inputs)
    pruned = wrapped.prune(
        [wrapped.graph.get_tensor_by_name(inputs[n]) for n in names],
        {k: wrapped.graph.get_tensor_by_name(v) for k, v in outputs.items()},
    )

    def serve(feed):
        return pruned(*[feed[n] for n in names])

    return tf.function(serve, input_signature=[specs]), pruned


def _float32_specs(tf, fn) -> dict:
    specs = fn.structured_input_signature[1]
    return {
        n: tf.TensorSpec(s.shape, tf.float32 if s.dtype in (tf.float16, tf.bfloat16) else s.dtype, name=n)
        for n, s in specs.items()
    }


def _probe(specs: dict, rng) -> dict:
    def one(s):
        shape = [1 if d is None else d for d in s.shape.as_list()]
        if s.dtype.is_floating:
            return rng.uniform(0, 1, shape).astype(np.float32)
        return np.zeros(shape, s.dtype.as_numpy_dtype)

    return {n: one(s) for n, s in specs.items()}


def cast_saved_model(saved_model: Path, out: Path, key: str = SERVING) -> PrecisionCast | None:
    """Write the float32 recast of signature ``key`` of ``saved_model`` at ``out`` (served as ``serving_default``)
    and return what was done, or None (nothing written) when the signature computes in float32 already."""
    dtype, ops = low_precision_ops(saved_model, key)
    if dtype is None:
        return None
    tf = import_tf()
    loaded = tf.saved_model.load(str(saved_model))
    fn = loaded.signatures[key]
    try:
        graph_def, inputs, outputs = _frozen_float32(tf, fn)
        specs = _float32_specs(tf, fn)
        serve, _ = _serve_graph_def(tf, graph_def, inputs, outputs, specs)
        module = tf.Module()
        module.serve = serve
        tf.saved_model.save(module, str(out), signatures={SERVING: serve.get_concrete_function()})
    except (ValueError, TypeError, KeyError, tf.errors.OpError) as exc:
        raise ModelError(
            f"{saved_model} computes in {dtype} (a mixed-precision policy: {', '.join(ops[:6])}), which TFLite, "
            "TFJS and ONNX kernels do not run, and edgetool could not recast its graph to float32 "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}). Where the model is "
            "built, call keras.mixed_precision.set_global_policy('float32'), build it again, load the trained "
            "weights (model.set_weights or load_weights) and save that: the same model computing in float32."
        ) from None
    samples, worst, rel = _drift(tf, fn, serve, specs)
    why = (
        f"it computes in {dtype} (a mixed-precision policy: {', '.join(ops[:6])}{' …' if len(ops) > 6 else ''}), "
        "which the TFLite builtin kernels do not run (they compute in float32; --quant fp16 means float16 "
        "weights); the same weights computing in float32 convert in every mode"
    )
    return PrecisionCast(dtype, ops, "graph", samples, round(worst, 8), round(rel, 8), why)


def _drift(tf, fn, serve, specs: dict) -> tuple[int, float, float]:
    """(samples, max |recast - model| over float outputs, that over the outputs' range) on seeded random inputs;
    (0, 0, 0) when the model cannot be fed such inputs (strings)."""
    rng, worst, span = np.random.default_rng(0), 0.0, 0.0
    try:
        for _ in range(PROBE_SAMPLES):
            feed = _probe(specs, rng)
            want = fn(**{n: tf.cast(v, fn.structured_input_signature[1][n].dtype) for n, v in feed.items()})
            got = serve(feed)
            for k in want:
                if not want[k].dtype.is_floating:
                    continue
                a, b = np.asarray(tf.cast(want[k], tf.float32)), np.asarray(got[k])
                worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)))
                span = max(span, float(np.ptp(a)) if a.size else 0.0, float(np.max(np.abs(a), initial=0.0)))
    except (ValueError, TypeError, tf.errors.OpError):
        return 0, 0.0, 0.0
    return PROBE_SAMPLES, worst, (worst / span if span else 0.0)


def precision_note(cast: PrecisionCast) -> str:
    """The line convert prints (and the manifest's ``source.precision`` records) for a recast model."""
    return (
        f"mixed precision: cast to float32 — {cast.why}. Every artefact is built from the float32 recast "
        f"(same weights); on {cast.samples} seeded random inputs it differs from the model as trained by at most "
        f"{cast.max_abs_diff:.3g} ({cast.relative:.2%} of the output range). eval --reference MODEL measures the "
        f"drift from the model as trained ({cast.dtype} compute)."
    )


def reference_precision_note(saved_model: Path, key: str | None) -> str | None:
    """eval's note for a reference that computes in float16/bfloat16 (None for a float32 one)."""
    dtype, ops = low_precision_ops(saved_model, key or SERVING)
    if dtype is None:
        return None
    return (
        f"The reference computes in {dtype} (mixed precision: {', '.join(ops[:4])}): it is the model as trained. "
        "edgetool convert builds every artefact from its float32 recast (manifest.json's source.precision), so "
        "each row's agreement and drop include that cast."
    )


@contextlib.contextmanager
def float32_saved_model(saved_model: Path, key: str | None = None) -> Iterator[tuple[Path, str, PrecisionCast | None]]:
    """(SavedModel, signature key, the cast or None) to build from: ``saved_model`` itself when it computes in
    float32, else its float32 recast in a temp dir that lives as long as the block (for demo's TFJS model)."""
    key = key or SERVING
    if low_precision_ops(saved_model, key)[0] is None:
        yield Path(saved_model), key, None
        return
    with tempfile.TemporaryDirectory(prefix="edgetool-float32-") as tmp:
        cast = cast_saved_model(saved_model, Path(tmp) / "float32", key)
        yield Path(tmp) / "float32", SERVING, cast
