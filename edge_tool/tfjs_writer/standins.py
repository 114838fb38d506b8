"""Big float variables kept out of the frozen graph: stand-ins while grappler works, their values streamed to shards.

Freezing inlines every variable as a ``Const``; grappler then serializes, parses and rewrites the whole GraphDef
several times, so a 400 MB Dense layer cost ~20 copies (8.9 GB peak for a 386 MB SavedModel). Here a float32
variable of at least ``STREAM_BYTES`` is frozen as a ``Const`` of its real dtype and shape holding one NaN (a
splat: a few bytes), so TensorFlow and grappler see the graph they always saw and write the same nodes in the same
order; ``weights`` reads the values from the loaded variable only when it writes that weight's shard bytes. Grappler
folds a frozen ReadVariableOp (an Identity) into a Const of its own name: that name maps to the same variable. Any
other constant grappler computes from a stand-in carries the NaN, and then the graph is frozen again with its
values inlined (the old way, correct and as heavy as before). A graph with a ``While`` loop (whose loop variables
take their shapes from the frozen values) is frozen the usual way too.
"""

from __future__ import annotations

import numpy as np

from edge_tool.core.env import import_tf

STREAM_BYTES = 16 * 1024 * 1024  # a float32 variable this big or bigger is streamed, not inlined
NEVER = 2**62  # a threshold no variable reaches: freeze every value inline
_LOOPS = {"While", "StatelessWhile"}


def has_loops(graph_def) -> bool:
    """True when the graph or its function library holds a While loop."""
    nodes = list(graph_def.node) + [n for fn in graph_def.library.function for n in fn.node_def]
    return any(n.op in _LOOPS for n in nodes)


def freeze_with_stand_ins(fn, min_bytes: int):
    """(GraphDef, inputs, outputs, {node name: variable}) of ``fn`` frozen with its float32 variables of at least
    ``min_bytes`` as NaN splats of their shapes (a few bytes each); None when there are none or the graph has
    a While loop (then freeze the usual way)."""
    tf = import_tf()
    from tensorflow.python.framework import convert_to_constants as ctc

    class _Data(ctc._FunctionConverterDataInEager):
        """The converter's data with big float32 variables read as 1-element stand-ins."""

        def _eval(self, tensor):
            if isinstance(tensor, tf.Variable) and tensor.dtype == tf.float32:
                shape = tensor.shape
                if shape.is_fully_defined() and shape.rank and shape.num_elements() * 4 >= min_bytes:
                    stand_in = np.zeros((1,) * shape.rank, np.float32)
                    picked[id(stand_in)] = (stand_in, tensor)
                    return stand_in
            return tensor.numpy()

    picked: dict[int, tuple] = {}
    data = _Data(func=fn, lower_control_flow=False, aggressive_inlining=True)
    chosen = {name: picked[id(t.numpy)][1] for name, t in data.tensor_data.items() if id(t.numpy) in picked}
    if not chosen or has_loops(data.graph_def):
        return None
    fills = {name: uniform_value(variable) for name, variable in chosen.items()}
    variables = {name: chosen[name] for name, fill in fills.items() if fill is None}
    if not variables:
        return None
    graph_def, converted = ctc._replace_variables_by_constants(converter_data=data)
    _splat_shapes(graph_def, chosen, fills)
    frozen = ctc._construct_concrete_function(fn, graph_def, converted)  # as convert_variables_to_constants_v2
    graph_def = frozen.graph.as_graph_def()
    add_readers(graph_def, variables)
    return graph_def, frozen.inputs, frozen.outputs, variables


def uniform_value(variable) -> np.float32 | None:
    """The one value every element of ``variable`` holds, bit for bit (a zero bias, a ones scale), else None; read a
    block of rows at a time."""
    rows = max(1, (1 << 22) // max(1, variable.shape[1:].num_elements() or 1))
    first = None
    for start in range(0, variable.shape[0], rows):
        bits = np.ascontiguousarray(variable[start : start + rows].numpy(), "<f4").view("<u4")
        first = bits.flat[0] if first is None else first
        if (bits != first).any():
            return None
    return np.array([first], "<u4").view("<f4")[0]


def _splat_shapes(graph_def, chosen: dict, fills: dict) -> None:
    """Each stand-in Const of ``chosen`` takes its variable's full shape as a one-value splat (a few bytes): the
    variable's own value when it holds one value (then the splat is exact and grappler may simplify with it as it
    always did, ``x + 0``), else NaN, so that any value grappler computes from it carries the NaN
    (``take_stand_ins`` refuses such a graph). TensorFlow and grappler see the shapes they always saw."""
    tf = import_tf()
    for node in graph_def.node:
        if node.name in chosen:
            tensor = node.attr["value"].tensor
            tensor.ClearField("tensor_content")
            fill = fills[node.name]
            tensor.float_val[:] = [float("nan") if fill is None else float(fill)]
            tensor.tensor_shape.CopyFrom(tf.TensorShape(chosen[node.name].shape).as_proto())


def add_readers(graph_def, variables: dict) -> None:
    """Fold each Identity reading a stand-in (a frozen ReadVariableOp, chains too) into a stand-in Const of its own
    name, as grappler's constant folding would (without grappler materialising the values to do it), and add it
    to ``variables``."""
    nodes = {n.name: n for n in graph_def.node}
    readers = True
    while readers:
        readers = [n for n in graph_def.node if n.op == "Identity" and n.input and n.input[0] in variables]
        for node in readers:
            source = nodes[node.input[0]]
            variables[node.name] = variables[source.name]
            controls = [i for i in node.input[1:] if i.startswith("^")]
            node.op = "Const"
            node.ClearField("input")
            node.input.extend(controls)
            node.attr.clear()
            node.attr["dtype"].CopyFrom(source.attr["dtype"])
            node.attr["value"].CopyFrom(source.attr["value"])


def _capture_names(fn) -> dict:
    """{id(captured tensor): the name of the placeholder that captures it in ``fn``'s graph}."""
    return {id(outside): inside.name.split(":")[0] for outside, inside in fn.graph.captures}


def captured_variables(fn) -> dict:
    """{capture placeholder name: variable} of a concrete function, paired as convert_variables_to_constants pairs
    them (the variable whose handle is that capture); the SavedModel's loaded object must still be alive."""
    names = _capture_names(fn)
    return {names[id(v.handle)]: v for v in fn.graph.variables if id(v.handle) in names}


def capture_names(fn, streamed: dict) -> dict:
    """{stand-in node name: (the capture name of its variable in ``fn``, its shape)}: names that hold across loads."""
    names = _capture_names(fn)
    return {node: (names[id(variable.handle)], tuple(variable.shape)) for node, variable in streamed.items()}


def variables_named(fn, captures: dict) -> dict | None:
    """{stand-in node name: variable of ``fn``} for ``capture_names``' answer; None when a capture is not a float32
    variable of the same shape (the SavedModel changed between the loads)."""
    variables = captured_variables(fn)
    found = {node: variables.get(name) for node, (name, _) in captures.items()}
    for node, variable in found.items():
        if variable is None or variable.dtype.name != "float32" or tuple(variable.shape) != captures[node][1]:
            return None
    return found


def _is_splat_nan(node) -> bool:
    if node.op != "Const" or "value" not in node.attr:  # reading a missing map key would add it
        return False
    tensor = node.attr["value"].tensor
    return not tensor.tensor_content and any(v != v for v in tensor.float_val)


def take_stand_ins(graph_def, variables: dict) -> bool:
    """Make each stand-in Const grappler left value-less (its values are read from the variable as the shards are
    written); False, changing nothing, when grappler computed a constant from a stand-in (a folded op over a big
    weight): then the graph must be frozen with its values."""
    nodes = list(graph_def.node) + [n for fn in graph_def.library.function for n in fn.node_def]
    ours = [n for n in graph_def.node if n.name in variables and _is_splat_nan(n)]
    if sum(map(_is_splat_nan, nodes)) != len(ours):
        return False
    for node in ours:
        node.attr["value"].tensor.ClearField("float_val")
    return True
