"""The final activation of each signature output (softmax / sigmoid / linear / ...), read from saved_model.pb.

Only the protobuf is parsed (no model code is loaded or run): from the signature's output tensor the walk follows
Identity-like ops and function calls (StatefulPartitionedCall into the function library) back to the op that
computed the value.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.models.signatures import read_meta_graph

ACTIVATIONS = {
    "Softmax": "softmax",
    "LogSoftmax": "softmax",
    "Sigmoid": "sigmoid",
    "Relu": "relu",
    "Relu6": "relu",
    "Softplus": "relu",
    "Tanh": "tanh",
    "Elu": "linear",
    "Selu": "linear",
}
LINEAR = {
    "BiasAdd",
    "MatMul",
    "BatchMatMulV2",
    "BatchMatMulV3",
    "Add",
    "AddV2",
    "Conv2D",
    "Conv3D",
    "DepthwiseConv2dNative",
    "Einsum",
    "Mul",
    "Sub",
    "Conv2DBackpropInput",
    "FusedBatchNormV3",
}
THROUGH = {
    "Identity",
    "IdentityN",
    "Reshape",
    "Squeeze",
    "ExpandDims",
    "Cast",
    "StopGradient",
    "ResizeBilinear",
    "ResizeNearestNeighbor",
    "Transpose",
}
CALLS = {"StatefulPartitionedCall", "PartitionedCall"}
MAX_STEPS = 400


def final_activations(path: Path, key: str = "serving_default") -> dict[str, str]:
    """{signature output name: softmax | sigmoid | relu | tanh | linear | l2norm | unknown} (l2norm: the output is
    x * rsqrt(...), an L2 normalisation)."""
    mg = read_meta_graph(path)
    sig = mg.signature_def.get(key)
    if sig is None:
        return {}
    funcs = {f.signature.name: f for f in mg.graph_def.library.function}
    top = {n.name: n for n in mg.graph_def.node}
    found = {}
    for name, info in sig.outputs.items():
        node, _, idx = info.name.partition(":")
        found[name] = _walk(_Scope(top, None), node, int(idx or 0), funcs)
    return found


class _Scope:
    """The nodes of the top-level graph or of one library function (whose ``ret`` maps outputs to nodes)."""

    def __init__(self, nodes: dict, fdef):
        self.nodes, self.fdef = nodes, fdef

    def ref(self, text: str) -> tuple[str, int]:
        """(node, output index) of an input reference (``node:idx`` in graphs, ``node:arg:idx`` in functions)."""
        parts = text.lstrip("^").split(":")
        return parts[0], int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 0


def _times_rsqrt(scope: _Scope, inputs: list[str]) -> bool:
    """True for x * rsqrt(...) (tf.math.l2_normalize, Keras' UnitNormalization)."""
    for text in inputs:
        node = scope.nodes.get(scope.ref(text)[0])
        if node is not None and node.op == "Rsqrt":
            return True
    return False


def _walk(scope: _Scope, node_name: str, idx: int, funcs: dict, steps: int = 0) -> str:
    while steps < MAX_STEPS:
        steps += 1
        node = scope.nodes.get(node_name)
        if node is None:
            return "unknown"
        if node.op in ACTIVATIONS:
            return ACTIVATIONS[node.op]
        data_inputs = [i for i in node.input if not i.startswith("^")]
        if node.op == "Mul" and _times_rsqrt(scope, data_inputs):
            return "l2norm"
        if node.op in LINEAR:
            return "linear"
        if node.op in CALLS:
            fdef = funcs.get(node.attr["f"].func.name)
            if fdef is None or idx >= len(fdef.signature.output_arg):
                return "unknown"
            inner = _Scope({n.name: n for n in fdef.node_def}, fdef)
            target = inner.ref(fdef.ret[fdef.signature.output_arg[idx].name])
            return _walk(inner, *target, funcs, steps)
        if node.op in THROUGH and data_inputs:
            pick = data_inputs[idx] if node.op == "IdentityN" and idx < len(data_inputs) else data_inputs[0]
            node_name, idx = scope.ref(pick)
            continue
        return "unknown"
    return "unknown"
