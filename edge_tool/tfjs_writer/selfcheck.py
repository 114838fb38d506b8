"""Does the TensorFlow.js model compute what TensorFlow computes? Checked in tfjs itself, in Node, as it is written.

tfjs' kernels can silently disagree with TensorFlow (tensorflowjs' file of a Keras-3 causal-mask attention agreed
on 36 % of samples). So every graph model edgetool writes is run by tfjs (the vendored runtime, wasm backend as
the demo page runs it, cpu when the wasm files are absent) on a few seeded random inputs and compared with
TensorFlow on the same inputs: the signature function itself for unquantized weights, or — for float16/uint8/
uint16 weights — the same optimised graph with its constants replaced by the values tfjs decodes, so the
comparison judges the writer and the runtime, not the compression the user chose. Both sides compute in float32,
so the outputs must agree up to float rounding (``models.probes``' float32 tolerance of max(1, max |output|); its float16 one
when TensorFlow computes in float16, a mixed-precision model); more is a wrong file, and it is not kept. Without Node or the runtime the check is skipped and the record says why.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError, RuntimeFailure, UsageError
from edge_tool.models.probes import agreement, probe_feeds
from edge_tool.models.tolerances import FLOAT16_TOLERANCE, FLOAT32_TOLERANCE
from edge_tool.nodejs.tfjs_session import TfjsSession, wasm_backend_dir

_HALF = 19  # DT_HALF


def computes_in_half(graph_def) -> bool:
    """True when TensorFlow computes part of the graph in float16 (a mixed_float16 Keras model): tfjs computes it in
    float32, so the two differ by float16 rounding, and the check allows that (``models.probes``' float16 tolerance)."""
    nodes = list(graph_def.node) + [n for fn in graph_def.library.function for n in fn.node_def]
    return any(n.attr["T"].type == _HALF or n.attr["DstT"].type == _HALF for n in nodes)


def _signature_info(frozen) -> SimpleNamespace:
    tf = import_tf()
    inputs = [SimpleNamespace(name=t.key, shape=t.shape, dtype=tf.as_dtype(t.dtype).name) for t in frozen.inputs]
    return SimpleNamespace(inputs=inputs)


def _backends() -> list[str]:
    """wasm (what the demo page and eval run) then cpu, as eval falls back; cpu alone without the wasm files."""
    try:
        wasm_backend_dir()
    except UsageError:
        return ["cpu"]
    return ["wasm", "cpu"]


def run_in_tfjs(model_json: Path, feeds: list[dict]) -> tuple[list[dict], str]:
    """(outputs per feed, the runtime that ran them): wasm, else cpu when wasm cannot run the model (a kernel it
    lacks). UsageError without Node or the runtime; ConversionError when no backend runs the file."""
    failures = []
    for backend in _backends():
        try:
            with TfjsSession(model_json, backend=backend) as session:
                got = [session.predict(dict(f)) for f in feeds]
                note = f"; wasm backend failed: {failures[0]}" if failures else ""
                return got, session.version + note
        except RuntimeFailure as exc:
            failures.append(str(exc))
    raise ConversionError(
        f"TensorFlow.js cannot run the graph model edgetool wrote for this model ({'; '.join(failures)}); "
        "edgetool does not ship it. For a browser demo use `edgetool demo MODEL --litert` (LiteRT.js runs the "
        ".tflite)."
    )


def _reference(frozen, reference_graph, weights, quant: str, feeds: list[dict]) -> list[dict]:
    """TensorFlow's outputs for each feed: the signature (quant none) or the graph with tfjs' weight values."""
    tf = import_tf()
    if quant == "none":
        return [
            {k: np.asarray(v) for k, v in frozen.function(**{n: tf.constant(x) for n, x in f.items()}).items()}
            for f in feeds
        ]
    values = {w.name: w.values for w in weights if w.variable is None}
    streamed = {w.name: w for w in weights if w.variable is not None}
    graph_def = type(reference_graph)()
    graph_def.CopyFrom(reference_graph)
    _substitute(graph_def.node, "", values)
    _feed_streamed(graph_def.node, streamed)
    for fn in graph_def.library.function:
        _substitute(fn.node_def, fn.signature.name + "/", values)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    fetch = {t.key: graph.get_tensor_by_name(t.tensor) for t in frozen.outputs}
    names = {t.key: t.tensor for t in frozen.inputs}
    decoded = {f"{name}:0": w.decoded() for name, w in streamed.items()}
    with tf.compat.v1.Session(graph=graph) as session:
        return [
            {
                k: np.asarray(v)
                for k, v in session.run(fetch, {**decoded, **{names[k]: x for k, x in f.items()}}).items()
            }
            for f in feeds
        ]


def _feed_streamed(nodes, streamed: dict) -> None:
    """Each streamed weight's Const becomes a Placeholder of its shape, fed with the values tfjs decodes: a big
    weight's values go into the session once, not into a GraphDef that TensorFlow copies several times over."""
    tf = import_tf()
    for node in nodes:
        if node.op == "Const" and node.name in streamed:
            node.op = "Placeholder"
            del node.attr["value"]
            node.attr["shape"].shape.CopyFrom(tf.TensorShape(streamed[node.name].spec["shape"]).as_proto())


def _substitute(nodes, prefix: str, values: dict) -> None:
    tf = import_tf()
    for node in nodes:
        value = values.get(prefix + node.name) if node.op == "Const" else None
        if value is not None and node.attr["dtype"].type in (1, _HALF):  # float constants only were compressed
            dtype = tf.as_dtype(node.attr["dtype"].type).as_numpy_dtype
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value.astype(dtype)))


def skipped(reason: str) -> dict:
    """The manifest record of a check that could not run."""
    return {"inputs": "seeded random", "samples": 0, "checked": False, "reason": reason}


def verify(model_json: Path, frozen, reference_graph, weights, quant: str) -> dict:
    """Run ``model_json`` in tfjs on seeded probes and compare with TensorFlow; the record (manifest
    ``agreement``), or ConversionError when they disagree or tfjs cannot run the file."""
    feeds = probe_feeds(_signature_info(frozen))
    if feeds is None:
        return skipped("an input has an unknown non-batch dimension or a non-numeric dtype: no random probe fits")
    tf = import_tf()
    try:
        want = _reference(frozen, reference_graph, weights, quant, feeds)
    except (ValueError, TypeError, RuntimeError, tf.errors.OpError) as exc:
        return skipped(f"TensorFlow itself refuses the random probes ({type(exc).__name__})")
    try:
        got, runtime = run_in_tfjs(model_json, feeds)
    except UsageError as exc:
        return skipped(f"not run in tfjs: {str(exc).split(';')[0]}")
    half = computes_in_half(reference_graph)
    result = agreement(want, got, FLOAT16_TOLERANCE if half else FLOAT32_TOLERANCE)
    if result is None:
        return skipped("no float output to compare") | {"runtime": runtime}
    record = {
        "inputs": "seeded random",
        "samples": result.samples,
        "checked": True,
        "max_abs_error": result.max_abs_error if np.isfinite(result.max_abs_error) else None,
        "tolerance": result.tolerance,
        "ok": result.ok,
        "runtime": runtime,
    }
    if half:
        record["reason"] = "TensorFlow computes this model partly in float16, tfjs in float32: fp16 tolerance"
    if not result.ok:
        raise ConversionError(disagreement(result, runtime))
    return record


def disagreement(result, runtime: str) -> str:
    """The refusal for a graph model whose outputs in tfjs differ from TensorFlow's."""
    error = f"max abs error {result.max_abs_error:.3g}" if np.isfinite(result.max_abs_error) else "NaN/Inf outputs"
    return (
        f"The TensorFlow.js model of this model does not compute what the SavedModel computes: {error} on "
        f"{result.samples} seeded random inputs in {runtime}, where float rounding explains at most "
        f"{result.tolerance:.3g}. A tfjs kernel computes one of its ops differently from TensorFlow, so edgetool "
        "does not ship the file. For the browser use `edgetool demo MODEL --litert` (LiteRT.js runs the .tflite), "
        "or convert --format tflite."
    )
