"""Rewrites of a frozen GraphDef into forms TensorFlow.js 4.22 computes right, and fast.

- Batch norms. A training-mode ``FusedBatchNorm*`` (how tf_keras' LayerNormalization computes its moments) is run
  by tfjs as an inference-mode batch norm with empty mean and variance: NaN or garbage. It becomes plain ops
  (Mean, SquaredDifference, Rsqrt, Mul, Add). An inference-mode one after a convolution is folded into the
  filter and a BiasAdd; elsewhere it becomes a Mul and an Add with constant scale and shift.
- Fusions. Conv2D / DepthwiseConv2dNative / MatMul + BiasAdd (+ Relu, Relu6, Elu, Sigmoid or LeakyRelu) become
  ``_FusedConv2D`` / ``FusedDepthwiseConv2dNative`` / ``_FusedMatMul``: the only fused forms tfjs' kernels run (no
  batch norm inside, no hard-swish, no Tanh: see tfjs-core's fused_util and the converter's executors).
"""

from __future__ import annotations

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.models.graphdef import add_const, const_value

_FUSED_BN = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
FUSABLE_ACTIVATIONS = ("Relu", "Relu6", "Elu", "Sigmoid", "LeakyRelu")
_FUSED_NAME = {
    "Conv2D": "_FusedConv2D",
    "DepthwiseConv2dNative": "FusedDepthwiseConv2dNative",
    "MatMul": "_FusedMatMul",
}
_COPIED_ATTRS = (
    "T",
    "strides",
    "padding",
    "explicit_paddings",
    "data_format",
    "dilations",
    "transpose_a",
    "transpose_b",
)


def _node_name(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


class _Graph:
    """The main graph's nodes by name, with who reads each node (by data edge, or control edge)."""

    def __init__(self, graph_def, keep: set[str]):
        self.graph_def, self.keep = graph_def, keep
        self.nodes = {n.name: n for n in graph_def.node}
        self.readers: dict[str, list[str]] = {}
        for n in graph_def.node:
            for ref in n.input:
                self.readers.setdefault(_node_name(ref), []).append(ref if ref.startswith("^") else n.name)

    def sole_reader(self, name: str):
        """The one node reading ``name`` by a data edge, or None (more readers, a control edge, a graph output)."""
        readers = self.readers.get(name, [])
        if name in self.keep or len(readers) != 1 or readers[0].startswith("^"):
            return None
        return self.nodes[readers[0]]

    def const(self, ref: str):
        return const_value(self.nodes, ref)

    def uses_extra_outputs(self, name: str) -> bool:
        """True when any output but the first of node ``name`` is read."""
        return any(
            ref.split(":")[0] == name and ref.split(":")[-1] not in ("0", name)
            for n in self.graph_def.node
            for ref in n.input
            if not ref.startswith("^")
        )


def _op(graph_def, name: str, op: str, inputs: list[str], dtype_attr, **attrs) -> str:
    node = graph_def.node.add(name=name, op=op)
    node.input.extend(inputs)
    node.attr["T"].CopyFrom(dtype_attr)
    for key, value in attrs.items():
        if isinstance(value, bool):
            node.attr[key].b = value
        else:
            node.attr[key].type = value
    return name


def rewrite_batch_norms(graph_def, keep: set[str]) -> int:
    """Replace every batch norm whose outputs but the first are unused (see module doc); returns how many."""
    g = _Graph(graph_def, keep)
    done = 0
    for bn in [n for n in graph_def.node if n.op in _FUSED_BN]:
        if g.uses_extra_outputs(bn.name):
            continue
        if bn.attr["is_training"].b:
            _moments_from_plain_ops(graph_def, bn)
        elif not _fold_inference(graph_def, g, bn):
            continue
        graph_def.node.remove(bn)
        done += 1
    return done


def _numpy_dtype(attr):
    """The numpy dtype of a node's ``T`` attribute (float32, or float16 in a mixed-precision graph)."""
    return import_tf().as_dtype(attr.type).as_numpy_dtype


def _channel_shape(bn) -> list[int]:
    fmt = bn.attr["data_format"].s.decode() or "NHWC"
    rank = len(fmt)
    return [1, -1] + [1] * (rank - 2) if fmt.startswith("NC") else [-1]


def _moments_from_plain_ops(graph_def, bn) -> None:
    """y = (x - mean) * rsqrt(var + eps) * scale + offset, with mean/var over every axis but the channel."""
    x, scale, offset = bn.input[0], bn.input[1], bn.input[2]
    fmt = bn.attr["data_format"].s.decode() or "NHWC"
    channel = fmt.index("C")
    axes = np.array([i for i in range(len(fmt)) if i != channel], np.int32)
    t, p = bn.attr["T"], bn.name + "/tfjs"
    reduce_axes = add_const(graph_def, f"{p}/axes", axes)
    mean = _op(graph_def, f"{p}/mean", "Mean", [x, reduce_axes], t, keep_dims=True, Tidx=3)
    sq = _op(graph_def, f"{p}/sqdiff", "SquaredDifference", [x, mean], t)
    var = _op(graph_def, f"{p}/variance", "Mean", [sq, reduce_axes], t, keep_dims=True, Tidx=3)
    eps = add_const(graph_def, f"{p}/epsilon", np.array(bn.attr["epsilon"].f, _numpy_dtype(t)))
    inv = _op(graph_def, f"{p}/rsqrt", "Rsqrt", [_op(graph_def, f"{p}/var_eps", "AddV2", [var, eps], t)], t)
    shape = add_const(graph_def, f"{p}/channel_shape", np.array(_channel_shape(bn), np.int32))
    scale_b = _op(graph_def, f"{p}/scale", "Reshape", [scale, shape], t, Tshape=3)  # 3: DT_INT32
    offset_b = _op(graph_def, f"{p}/offset", "Reshape", [offset, shape], t, Tshape=3)
    centred = _op(graph_def, f"{p}/centred", "Sub", [x, mean], t)
    normed = _op(graph_def, f"{p}/normed", "Mul", [centred, inv], t)
    scaled = _op(graph_def, f"{p}/scaled", "Mul", [normed, scale_b], t)
    _op(graph_def, bn.name, "AddV2", [scaled, offset_b], t)


def _fold_inference(graph_def, g: _Graph, bn) -> bool:
    """Fold an inference batch norm with constant parameters into the conv before it, or into a Mul + Add."""
    params = [g.const(ref) for ref in bn.input[1:5]]
    if any(p is None for p in params) or any(p.size == 0 for p in params[2:]):
        return False
    scale, offset, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + bn.attr["epsilon"].f)
    shift = (offset - mean * s).astype(_numpy_dtype(bn.attr["T"]))
    p, t = bn.name + "/tfjs", bn.attr["T"]
    conv = g.nodes.get(_node_name(bn.input[0]))
    fmt = bn.attr["data_format"].s.decode() or "NHWC"
    filt = g.const(conv.input[1]) if conv is not None and conv.op in ("Conv2D", "DepthwiseConv2dNative") else None
    if filt is not None and fmt == "NHWC" and g.sole_reader(conv.name) is bn and filt.dtype == np.float32:
        factor = s.reshape(filt.shape[2], -1) if conv.op == "DepthwiseConv2dNative" else s
        conv.input[1] = add_const(graph_def, f"{p}/filter", (filt * factor).astype(np.float32))
        bias = graph_def.node.add(
            name=bn.name, op="BiasAdd", input=[conv.name, add_const(graph_def, f"{p}/bias", shift)]
        )
        bias.attr["T"].CopyFrom(t)
        return True
    shape = _channel_shape(bn)
    mul_c = add_const(graph_def, f"{p}/mul", s.astype(_numpy_dtype(t)).reshape(shape))
    scaled = _op(graph_def, f"{p}/scaled", "Mul", [bn.input[0], mul_c], t)
    _op(graph_def, bn.name, "AddV2", [scaled, add_const(graph_def, f"{p}/add", shift.reshape(shape))], t)
    return True


def prune(graph_def, keep: set[str]) -> int:
    """Drop the main-graph nodes no output needs (what the rewrites left behind: folded batch-norm parameters, a
    convolution's unscaled filter); the signature's nodes ``keep`` stay. Returns how many were dropped."""
    nodes = {n.name: n for n in graph_def.node}
    needed, todo = set(), [name for name in keep if name in nodes]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        todo.extend(_node_name(ref) for ref in nodes[name].input if _node_name(ref) in nodes)
    kept = [n for n in graph_def.node if n.name in needed]
    dropped = len(graph_def.node) - len(kept)
    kept = [type(n).FromString(n.SerializeToString()) for n in kept]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    return dropped


def fuse_for_tfjs(graph_def, keep: set[str]) -> int:
    """Fuse conv/matmul + BiasAdd (+ activation) into the fused ops tfjs runs; returns how many were fused."""
    done = 0
    while True:
        g = _Graph(graph_def, keep)
        match = next((m for n in graph_def.node if (m := _fusable(g, n))), None)
        if match is None:
            return done
        _fuse(graph_def, *match)
        done += 1


def _fusable(g: _Graph, conv):
    """(conv, bias_add, activation or None) when ``conv`` starts a chain tfjs has a fused kernel for."""
    if conv.op not in _FUSED_NAME or conv.attr["T"].type != 1:  # float32 only
        return None
    if conv.op != "MatMul" and (conv.attr["data_format"].s.decode() or "NHWC") != "NHWC":
        return None
    bias = g.sole_reader(conv.name)
    if bias is None or bias.op != "BiasAdd" or _node_name(bias.input[0]) != conv.name:
        return None
    if (bias.attr["data_format"].s.decode() or "NHWC") != "NHWC":
        return None
    act = g.sole_reader(bias.name)
    return conv, bias, act if act is not None and act.op in FUSABLE_ACTIVATIONS else None


def _fuse(graph_def, conv, bias, act) -> None:
    last = act if act is not None else bias
    fused = graph_def.node.add(name=last.name, op=_FUSED_NAME[conv.op], device=conv.device)
    fused.input.extend([conv.input[0], conv.input[1], bias.input[1]])
    for attr in _COPIED_ATTRS:
        if attr in conv.attr:
            fused.attr[attr].CopyFrom(conv.attr[attr])
    ops = [b"BiasAdd"] + ([act.op.encode()] if act is not None else [])
    fused.attr["fused_ops"].list.s.extend(ops)
    fused.attr["num_args"].i = 1
    fused.attr["epsilon"].f = 0.0
    fused.attr["leakyrelu_alpha"].f = act.attr["alpha"].f if act is not None and act.op == "LeakyRelu" else 0.2
    for node in (conv, bias, act):
        if node is not None:
            graph_def.node.remove(node)
