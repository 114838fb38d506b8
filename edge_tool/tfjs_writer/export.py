"""TensorFlow.js graph-model export by edgetool's own writer (no tensorflowjs package).

``export_tfjs``: freeze the signature, optimise with grappler (``graph``), rewrite batch norms and fuse into
the forms tfjs runs (``rewrite``), refuse ops TensorFlow.js 4.22 has no kernel for (``op_table``, read
from tfjs-converter's op mappers), move constants into weight shards (``weights``), write model.json, then run
the file in tfjs in Node against TensorFlow (``selfcheck``): a file that disagrees is not kept.
"""

from __future__ import annotations

import gc
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from edge_tool import __version__
from edge_tool.errors import ConversionError, UsageError
from edge_tool.models.jax_origin import is_jax_export, jax_way_out
from edge_tool.models.signature_choice import numeric_signature_way_out
from edge_tool.tfjs_writer import graph as tfjs_graph
from edge_tool.tfjs_writer import opfix as tfjs_opfix
from edge_tool.tfjs_writer import refvars, standins
from edge_tool.tfjs_writer import rewrite as tfjs_rewrite
from edge_tool.tfjs_writer import selfcheck as tfjs_selfcheck
from edge_tool.tfjs_writer import weights as tfjs_weights
from edge_tool.tfjs_writer.op_table import TFJS_OPS, TFJS_VERSION
from edge_tool.tflite_converter.diagnose import python_callbacks
from edge_tool.trust.side_effects import python_callback_refusal

TFJS_WEIGHT_QUANT = ("none", "float16", "uint8", "uint16")
SHARD_BYTES = tfjs_weights.SHARD_BYTES
WRITER = f"edgetool {__version__} (TensorFlow.js graph-model writer)"
NOT_OPS = {"Placeholder", "PlaceholderWithDefault", "Const", "NoOp"}


def tfjs_refusal(source) -> str | None:
    """Why TensorFlow.js cannot run this prepared source at all (a JAX export's XlaCallModule ops, string inputs,
    Python callbacks), or None."""
    if is_jax_export(source.saved_model):  # StableHLO inside an op: TensorFlow.js has no kernel for it
        return f"TensorFlow.js cannot run {source.original}: it has no kernel for XlaCallModule.{jax_way_out(source.original)}"
    refused = string_input_refusal(source.signature, source.original)
    callbacks = None if refused else python_callbacks(source.saved_model, source.signature.key)
    return refused or (python_callback_refusal(source.original, callbacks) if callbacks else None)


def string_input_refusal(signature, model) -> str | None:
    """Why a signature with string inputs cannot become a TensorFlow.js graph model, or None."""
    names = [t.name for t in signature.inputs if t.dtype in ("string", "object", "bytes")]
    if not names:
        return None
    return (
        f"TensorFlow.js cannot run {model}: its input {', '.join(names)} is a string tensor, and "
        "TensorFlow.js graph models take numeric tensors only (it has no kernels for the string ops)."
        + numeric_signature_way_out(model, signature.key)
        + " Keep the "
        "string preprocessing (tokenizing, TextVectorization, lookups) outside the model and export the "
        "numeric part for TFJS, or use --format tflite (TFLite runs string ops with --allow-select-tf-ops)."
    )


# ops TensorFlow.js 4.22 has no kernel for, and where they come from in a Keras model
_OP_ORIGINS = {
    "Erfc": "exact GELU: tf.nn.gelu / Keras activation 'gelu' with approximate=False",
    "Erf": "exact GELU (keras.ops.gelu with approximate=False)",
}


def unsupported_ops_message(ops: list[str]) -> str:
    """The refusal for a graph with ops TensorFlow.js has no kernel for: which, where they come from, the way out."""
    named = ", ".join(f"{op} ({_OP_ORIGINS[op]})" if op in _OP_ORIGINS else op for op in ops)
    return (
        f"TensorFlow.js {TFJS_VERSION} cannot run this model: TensorFlow.js has no kernel for {named}. For a browser "
        "demo use `edgetool demo MODEL --litert` (LiteRT.js runs the .tflite, which has these ops), or rebuild "
        "the model for TF.js without them (e.g. gelu with approximate=True), then convert again."
    )


def ops_from_refusal(text: str) -> list[str]:
    """The op names in a refusal written by ``unsupported_ops_message`` (check's tfjs target lists them)."""
    head, sep, rest = text.partition("TensorFlow.js has no kernel for ")
    if not sep:
        return []
    named = rest.split(". For a browser demo", 1)[0]
    return [part.split(" (", 1)[0].strip() for part in named.split(", ") if part.strip() and not part.startswith(" ")]


def graph_ops(graph_def) -> list[str]:
    """Op names of the main graph and every library function, first-use order."""
    nodes = list(graph_def.node) + [n for fn in graph_def.library.function for n in fn.node_def]
    return list(dict.fromkeys(n.op for n in nodes))


def missing_kernels(graph_def) -> list[str]:
    """Ops of ``graph_def`` TensorFlow.js has no kernel for (training-mode batch norms count: tfjs runs them wrong)."""
    missing = [op for op in graph_ops(graph_def) if op not in TFJS_OPS and op not in NOT_OPS]
    nodes = list(graph_def.node) + [n for fn in graph_def.library.function for n in fn.node_def]
    if any(n.op.startswith("FusedBatchNorm") and n.attr["is_training"].b for n in nodes):
        missing.append("FusedBatchNormV3(is_training=true)")
    return missing


@dataclass(frozen=True)
class TfjsExport:
    """A written graph model: model.json's path and the self-check record (manifest ``agreement``)."""

    model_json: Path
    check: dict


def export_tfjs(
    saved_model: Path,
    out_dir: Path,
    weight_quant: str | None = None,
    signature: str = "serving_default",
    user_metadata: dict | None = None,
    stream_bytes: int = standins.STREAM_BYTES,
) -> TfjsExport:
    """Convert a SavedModel signature to a self-checked tfjs graph model (model.json + shards) in ``out_dir``.

    ``user_metadata`` (labels, input normalization) lands in model.json's ``userDefinedMetadata``, which tfjs
    exposes as ``GraphModel.metadata``. The file is run in tfjs in Node on seeded probes and compared with
    TensorFlow (``selfcheck``); a disagreement raises ConversionError and leaves no ``out_dir``. Float32
    variables of ``stream_bytes`` or more stay out of the frozen graph and go to the shards one at a time
    (``standins``): memory in proportion to the model, not to the copies grappler makes.
    """
    quant = weight_quant or "none"
    if quant not in TFJS_WEIGHT_QUANT:
        raise UsageError(f"--tfjs-quant must be one of {', '.join(TFJS_WEIGHT_QUANT)}, got {quant!r}.")
    frozen, graph_def = _frozen_and_optimized(Path(saved_model), signature, stream_bytes)
    keep = {t.tensor.split(":")[0] for t in (*frozen.inputs, *frozen.outputs)}
    tfjs_rewrite.rewrite_batch_norms(graph_def, keep)
    tfjs_opfix.rewrite_band_parts(graph_def)
    tfjs_opfix.rewrite_einsums(graph_def)
    tfjs_rewrite.prune(graph_def, keep)
    if missing := missing_kernels(graph_def):
        raise ConversionError(unsupported_ops_message(missing))
    reference_graph = type(graph_def)()
    reference_graph.CopyFrom(graph_def)
    tfjs_rewrite.fuse_for_tfjs(graph_def, keep)
    weights = tfjs_weights.extract_weights(graph_def, quant, frozen.streamed)
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    try:
        model_json = _write(out_dir, graph_def, weights, frozen, user_metadata)
        check = tfjs_selfcheck.verify(model_json, frozen, reference_graph, weights, quant)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    return TfjsExport(model_json, check)


def _frozen_and_optimized(saved_model: Path, signature: str, stream_bytes: int):
    """(FrozenSignature, grappler's GraphDef); frozen again with every value inlined when grappler computed a
    constant from a streamed weight's stand-in (``standins``). With stand-ins, the loaded SavedModel is let go
    while grappler runs and loaded again after (``graph.released``): its variables and grappler's expanded
    stand-in never take memory at the same time."""
    frozen = tfjs_graph.freeze_signature(saved_model, signature, stream_bytes)
    if frozen.streamed:
        frozen = tfjs_graph.released(frozen)
        gc.collect()  # the loaded SavedModel's objects hold cycles: free its variables now, not at some later GC
    graph_def = tfjs_graph.optimize(frozen.graph_def, frozen.inputs, frozen.outputs)
    if refvars.prune_dead_branches(graph_def):  # a TF1 cond on a constant flag: fold what the live side leaves
        graph_def = tfjs_graph.optimize(graph_def, frozen.inputs, frozen.outputs)
    if frozen.streamed:
        taken = standins.take_stand_ins(graph_def, frozen.streamed)
        frozen = tfjs_graph.reloaded(saved_model, signature, frozen) if taken else None
        if frozen is None:
            return _frozen_and_optimized(saved_model, signature, standins.NEVER)
    return frozen, graph_def


# the GraphDef's map fields (NodeDef.attr, FunctionDef.ret/attr/arg_attr...): MessageToDict walks them in the map's
# own order, which differs between runs; sorted, the same graph always writes the same model.json bytes
MAP_FIELDS = frozenset({"attr", "ret", "controlRet", "argAttr", "resourceArgUniqueId"})


def sorted_maps(value, key: str = ""):
    """``value`` (MessageToDict's output) with every protobuf map field's entries in key order."""
    if isinstance(value, dict):
        items = sorted(value.items()) if key in MAP_FIELDS else value.items()
        return {k: sorted_maps(v, k) for k, v in items}
    if isinstance(value, list):
        return [sorted_maps(v) for v in value]
    return value


def _write(out_dir: Path, graph_def, weights, frozen, user_metadata: dict | None) -> Path:
    from google.protobuf.json_format import MessageToDict  # noqa: PLC0415 - protobuf comes with TensorFlow

    doc = {
        "format": "graph-model",
        "generatedBy": frozen.tf_version,
        "convertedBy": WRITER,
        "signature": {
            "inputs": tfjs_graph.signature_json(frozen.inputs),
            "outputs": tfjs_graph.signature_json(frozen.outputs),
        },
        "modelTopology": sorted_maps(MessageToDict(graph_def)),
    }
    if user_metadata:
        doc["userDefinedMetadata"] = user_metadata
    doc["weightsManifest"] = tfjs_weights.write_shards(weights, out_dir)
    model_json = out_dir / "model.json"
    model_json.write_text(json.dumps(doc))
    return model_json
