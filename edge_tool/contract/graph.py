"""Constant scaling right after an input in a SavedModel's serving graph (Keras-3 exports, tf.function models).

From the signature's input placeholder the graph is followed through call ops (into the called function, by
argument position) and Identity ops, while the input has exactly one consumer; Mul / RealDiv / Sub / AddV2 / Add
with a Const other operand are composed into one affine map ``x * scale + offset``. The first other op ends it.
Nothing is executed: only the GraphDef and its function library are read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.contract.keras_config import Scaling, _compose
from edge_tool.models.graphdef import const_value
from edge_tool.models.signatures import read_meta_graph

CALLS = {"StatefulPartitionedCall", "PartitionedCall"}
PASS = {"Identity", "Cast"}
AFFINE = {"Mul": "mul", "RealDiv": "div", "Sub": "sub", "AddV2": "add", "Add": "add"}
MAX_STEPS = 64


class _Scope:
    """One graph body (the main graph or a function): nodes by name, and how inputs name tensors in it."""

    def __init__(self, nodes, args: list[str] | None = None):
        self.nodes = {n.name: n for n in nodes}
        self.args = args or []

    def consumers(self, tensor: str) -> list[tuple[object, int]]:
        """(node, input position) of every node reading ``tensor`` (control inputs aside)."""
        found = []
        for node in self.nodes.values():
            for i, ref in enumerate(node.input):
                if not ref.startswith("^") and _same(ref, tensor):
                    found.append((node, i))
        return found


def _same(ref: str, tensor: str) -> bool:
    base = ref[:-2] if ref.endswith(":0") else ref
    return base == tensor or ref == tensor


def _const(scope: _Scope, ref: str):
    value = const_value(scope.nodes, ref)
    if value is None:
        return None
    value = np.asarray(value, dtype=np.float64).reshape(-1)
    return tuple(float(v) for v in value) if 0 < value.size <= 4 else None


def _step(op: str, const: tuple[float, ...], position: int):
    """(scale, offset) of ``x op c`` (x at input ``position``); None when not an affine map of x."""
    zero = tuple(0.0 for _ in const)
    if op == "mul":
        return const, zero
    if op == "add":
        return (1.0,), const
    if position != 0 or any(c == 0 for c in const) and op == "div":
        return None
    return (tuple(1 / c for c in const), zero) if op == "div" else ((1.0,), tuple(-c for c in const))


def graph_scaling(saved_model: Path, input_name: str, key: str = "serving_default") -> Scaling | None:
    """The affine map by constants applied first to signature input ``input_name``, or None."""
    mg = read_meta_graph(saved_model)
    sig = mg.signature_def.get(key)
    if sig is None or input_name not in sig.inputs:
        return None
    functions = {f.signature.name: f for f in mg.graph_def.library.function}
    scope, tensor = _Scope(mg.graph_def.node), sig.inputs[input_name].name.split(":")[0]
    total, ops = ((1.0,), (0.0,)), []
    for _ in range(MAX_STEPS):
        users = scope.consumers(tensor)
        if len(users) != 1:
            break
        node, pos = users[0]
        if node.op in CALLS:
            fdef = functions.get(node.attr["f"].func.name)
            if fdef is None or pos >= len(fdef.signature.input_arg):
                break
            scope, tensor = _Scope(fdef.node_def), fdef.signature.input_arg[pos].name
            continue
        if node.op in PASS:
            tensor = _output(node, scope)
            continue
        op = AFFINE.get(node.op)
        const = _const(scope, node.input[1 - pos]) if op and len(node.input) == 2 else None
        step = _step(op, const, pos) if const else None
        if step is None:
            break
        try:
            total = _compose(total, step)
        except ValueError:
            return None
        ops.append(f"{node.op} {node.name!r}")
        tensor = _output(node, scope)
    return Scaling(*total, tuple(ops)) if ops else None


def _output(node, scope: _Scope) -> str:
    """How consumers in ``scope`` name ``node``'s first output: ``name`` in a graph, ``name:<arg>:0`` in a
    function body (the output arg's name is the op's: y / z / output)."""
    if not any(":" in ref for n in scope.nodes.values() for ref in n.input if ref.startswith(node.name + ":")):
        return node.name
    ref = next(ref for n in scope.nodes.values() for ref in n.input if ref.startswith(node.name + ":"))
    return ref.rsplit(":", 1)[0] + ":0"
