"""Constants of a TensorFlow GraphDef: read one a node input names, or add one (the TF.js writer's graph rewrites,
and the contract's reading of the scaling a serving graph applies to its input). TensorFlow is imported on use."""

from __future__ import annotations

import numpy as np

from edge_tool.core.env import import_tf


def const_value(nodes: dict, ref: str) -> np.ndarray | None:
    """The value of the Const node that input ``ref`` ("name", "name:0", "^name") names in ``nodes`` (by node
    name), or None when that node is absent or not a Const."""
    node = nodes.get(ref.lstrip("^").split(":")[0])
    if node is None or node.op != "Const":
        return None
    return import_tf().make_ndarray(node.attr["value"].tensor)


def add_const(graph_def, name: str, value) -> str:
    """Add a Const node ``name`` holding ``value`` (an array or a NumPy scalar) to ``graph_def``; its name."""
    tf = import_tf()
    value = np.asarray(value)
    node = graph_def.node.add(name=name, op="Const")
    node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    return name
