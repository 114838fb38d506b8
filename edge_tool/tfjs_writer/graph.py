"""A SavedModel signature as one frozen, grappler-optimised GraphDef, ready for TensorFlow.js (edgetool's writer).

The signature (tags ``serve``) is loaded, its variables become constants (control flow stays as ``While``/``If``
nodes whose bodies live in the graph's function library, which tfjs executes), and TensorFlow's own grappler runs
the passes that never introduce an op tfjs lacks: pruning, constant folding, arithmetic and dependency
optimisation. The remapper is not run: its fusions depend on oneDNN (``_FusedHardSwish``, ``_MklLayerNorm``,
``_FusedConv2D`` with a batch norm inside), forms no tfjs 4.22 kernel runs; ``rewrite`` makes the fusions tfjs
does run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError
from edge_tool.tfjs_writer import refvars, standins
from edge_tool.tfjs_writer.state import refuse_stateful

GRAPPLER_PASSES = ("pruning", "constfold", "arithmetic", "dependency") * 2


@dataclass(frozen=True)
class SignatureTensor:
    """One signature input or output: its key, the graph tensor ("name:0"), TF dtype enum and shape (None dims)."""

    key: str
    tensor: str
    dtype: int
    shape: tuple | None


@dataclass(frozen=True)
class FrozenSignature:
    """The frozen signature's GraphDef, its inputs and outputs, the TF version that wrote it, and the callable
    signature function (the reference the written model is checked against); ``streamed`` names the big variables
    left out of the GraphDef as stand-ins (``standins``: node name -> variable; while ``released``, no function and
    node name -> (capture name, shape))."""

    graph_def: object
    inputs: tuple[SignatureTensor, ...]
    outputs: tuple[SignatureTensor, ...]
    tf_version: str
    function: object
    streamed: dict


def _shape(tensor) -> tuple | None:
    return None if tensor.shape.rank is None else tuple(tensor.shape.as_list())


def freeze_signature(saved_model: Path, key: str, stream_bytes: int = standins.STREAM_BYTES) -> FrozenSignature:
    """Load ``key`` from the SavedModel and freeze it (variables to constants, control flow kept as functions;
    float32 variables of ``stream_bytes`` or more as stand-ins, ``standins``)."""
    tf = import_tf()
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    loaded, fn = load_signature(saved_model, key)  # ``loaded`` holds the variables while they are frozen
    streamed = {}
    if not refvars.has_ref_variables(fn.graph.as_graph_def()):
        refuse_stateful(fn.graph.as_graph_def(), key, fn)  # Keras stateful=True: state a graph cannot hold
    if refvars.has_ref_variables(fn.graph.as_graph_def()):
        graph_def, graph_inputs, graph_outputs = _freeze_tf1(fn)
    elif frozen := standins.freeze_with_stand_ins(fn, stream_bytes):
        graph_def, graph_inputs, graph_outputs, streamed = frozen
    else:
        frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False, aggressive_inlining=True)
        graph_def, graph_inputs, graph_outputs = frozen.graph.as_graph_def(), frozen.inputs, frozen.outputs
    in_keys = sorted(fn.structured_input_signature[1])
    out_keys = sorted(fn.structured_outputs)
    if len(in_keys) != len(graph_inputs) or len(out_keys) != len(graph_outputs):
        raise ConversionError(
            f"{saved_model}'s signature {key!r} takes or returns tensors TensorFlow.js cannot be fed or read "
            f"(inputs {in_keys}, graph inputs {[t.name for t in graph_inputs]}): a resource or nested structure."
        )
    inputs = tuple(
        SignatureTensor(k, t.name, t.dtype.as_datatype_enum, _shape(t)) for k, t in zip(in_keys, graph_inputs)
    )
    outputs = tuple(
        SignatureTensor(k, t.name, t.dtype.as_datatype_enum, _shape(t)) for k, t in zip(out_keys, graph_outputs)
    )
    return FrozenSignature(graph_def, inputs, outputs, tf.__version__, fn, streamed)


def load_signature(saved_model: Path, key: str):
    """(the loaded SavedModel (tags ``serve``), the concrete function of its signature ``key``); the function alone
    runs, but its ``graph.variables`` are weak references the loaded object keeps alive."""
    tf = import_tf()
    try:
        loaded = tf.saved_model.load(str(saved_model), tags=["serve"])
    except (OSError, ValueError, RuntimeError, tf.errors.OpError) as exc:
        raise ConversionError(f"TensorFlow cannot load {saved_model} with tags 'serve': {exc}") from None
    if key not in loaded.signatures:
        raise ConversionError(
            f"{saved_model} has no signature {key!r} (it has: {', '.join(sorted(loaded.signatures)) or 'none'}); "
            "choose one with --signature."
        )
    return loaded, loaded.signatures[key]


def released(frozen: FrozenSignature) -> FrozenSignature:
    """``frozen`` without the loaded SavedModel: no function, and ``streamed`` naming each stand-in's variable by
    its capture (``standins.capture_names``). Dropping the last reference to the old one frees the variables, so
    grappler's constant folding (which expands a stand-in's splat into a tensor of the variable's size to test it
    for zeros and ones) reuses their memory instead of adding to it; ``reloaded`` brings them back."""
    return replace(frozen, function=None, streamed=standins.capture_names(frozen.function, frozen.streamed))


def reloaded(saved_model: Path, key: str, frozen: FrozenSignature) -> FrozenSignature | None:
    """A ``released`` signature with the SavedModel loaded again: its function (the self-check's reference) and
    each stand-in's variable; None when a capture no longer names a variable of the stand-in's shape."""
    loaded, fn = load_signature(saved_model, key)
    streamed = standins.variables_named(fn, frozen.streamed)
    del loaded  # as after ``freeze_signature``: the function and the streamed variables hold what runs
    return None if streamed is None else replace(frozen, function=fn, streamed=streamed)


def _freeze_tf1(fn):
    """A TF1 signature with ref variables frozen (``refvars``): its GraphDef, input and output tensors."""
    tf = import_tf()
    from tensorflow.python.framework import convert_to_constants as ctc

    inputs = [t for t in fn.inputs if t.dtype != tf.resource]
    try:  # convert_variables_to_constants_v2 without its re-import, which the ref ops fail until rewritten
        data = ctc._FunctionConverterDataInEager(func=fn, lower_control_flow=False, aggressive_inlining=True)
        graph_def, _ = ctc._replace_variables_by_constants(converter_data=data)
        refvars.rewrite_ref_ops(graph_def, {t.name.split(":")[0] for t in inputs})
        refvars.prune_dead_branches(graph_def)
        if writes := refvars.variable_writes(graph_def):
            raise ConversionError(
                f"This TF1 graph writes variables on the path its signature runs ({', '.join(writes[:4])}): state "
                "a TensorFlow.js graph model cannot hold, so edgetool does not write one. If they are a training "
                "update behind a flag the signature takes as an input (a `training` placeholder), export the "
                "signature without that input: the flag keeps its default and edgetool cuts the update branch. "
                "Resource variables (tf.compat.v1.enable_resource_variables()) also convert to the TFLite formats "
                "(convert --format tflite, `edgetool demo --litert`)."
            )
        with tf.Graph().as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
    except (AttributeError, ValueError, tf.errors.OpError) as exc:
        raise ConversionError(
            "This TF1 graph's variables (VariableV2 with Assign/RefSwitch inside a tf.cond) could not be frozen "
            f"into constants for TensorFlow.js ({exc}). Re-export it with resource variables: in the TF1 code, "
            "call tf.compat.v1.enable_resource_variables() before building the graph, then save it again."
        ) from None
    return graph_def, inputs, list(fn.outputs)


def optimize(graph_def, inputs: tuple[SignatureTensor, ...], outputs: tuple[SignatureTensor, ...]):
    """The GraphDef after grappler's pruning, constant folding, arithmetic and dependency passes (no remapper)."""
    tf = import_tf()
    from tensorflow.core.protobuf import config_pb2, device_properties_pb2, meta_graph_pb2
    from tensorflow.python.grappler import cluster as gcluster
    from tensorflow.python.grappler import tf_optimizer

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    meta = tf.compat.v1.train.export_meta_graph(graph_def=graph_def, graph=graph)
    signature = meta_graph_pb2.SignatureDef()
    for entries, tensors in ((signature.inputs, inputs), (signature.outputs, outputs)):
        for t in tensors:  # grappler builds its feeds from these: name, dtype and shape all needed
            entries[t.key].name = t.tensor
            entries[t.key].dtype = t.dtype
            entries[t.key].tensor_shape.CopyFrom(tf.TensorShape(t.shape).as_proto())
    meta.signature_def["edgetool"].CopyFrom(signature)
    meta.collection_def["train_op"].node_list.value.extend(sorted({t.tensor.split(":")[0] for t in outputs}))
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.optimizers[:] = list(GRAPPLER_PASSES)
    rewrite.min_graph_nodes = -1
    cpu = device_properties_pb2.NamedDevice(name="/CPU:0")
    cpu.properties.type = "CPU"  # a virtual cluster: grappler plans, it does not provision this machine
    return tf_optimizer.OptimizeGraph(config, meta, cluster=gcluster.Cluster(devices=[cpu]))


def signature_json(tensors: tuple[SignatureTensor, ...]) -> dict:
    """``{key: {name, dtype: "DT_…", tensorShape}}`` as tfjs' GraphModel reads a signature (proto3 JSON)."""
    tf = import_tf()
    out = {}
    for t in tensors:
        entry = {"name": t.tensor, "dtype": _DT_NAMES.get(tf.dtypes.as_dtype(t.dtype).name, "DT_INVALID")}
        if t.shape is None:
            entry["tensorShape"] = {"unknownRank": True}
        else:
            entry["tensorShape"] = {"dim": [{"size": str(-1 if d is None else d)} for d in t.shape]}
        out[t.key] = entry
    return out


_DT_NAMES = {
    "float32": "DT_FLOAT",
    "float16": "DT_HALF",
    "float64": "DT_DOUBLE",
    "bfloat16": "DT_BFLOAT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "int16": "DT_INT16",
    "int8": "DT_INT8",
    "uint8": "DT_UINT8",
    "bool": "DT_BOOL",
    "string": "DT_STRING",
    "complex64": "DT_COMPLEX64",
}
