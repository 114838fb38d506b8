"""Freezing a TF1 graph whose variables are reference variables (``VariableV2``), as TF1's own freezing did.

TF1 exports (``tf.compat.v1`` graph mode, ``SavedModelBuilder``) keep batch-norm statistics in variables and
update them inside a ``tf.cond`` on a ``training`` flag: ``RefSwitch`` feeds a ref variable into the cond and
``Assign``/``AssignSub`` (or, with resource variables, ``AssignVariableOp``) write it. Once the variables are
constants, ``Ref*`` control flow becomes its plain twin; a ``training`` flag that is not a signature input can only
take its default, so it becomes that constant and ``prune_dead_branches`` removes the branch it never takes (the
statistics update, writes included). A write left on the live path is state a TF.js graph model cannot hold:
``variable_writes`` names it and the writer refuses.
"""

from __future__ import annotations

from edge_tool.core.env import import_tf

REF_TWINS = {
    "RefSwitch": "Switch",
    "RefMerge": "Merge",
    "RefIdentity": "Identity",
    "RefEnter": "Enter",
    "RefExit": "Exit",
    "RefNextIteration": "NextIteration",
    "RefSelect": "Select",
}
ASSIGN_VALUES = ("Assign", "AssignAdd", "AssignSub")


RESOURCE_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")
WRITES = (*ASSIGN_VALUES, *RESOURCE_WRITES)


def has_ref_variables(graph_def) -> bool:
    """True when the graph holds TF1 reference variables or the ops that read or write them by reference, or a
    TF1 ``tf.cond`` (``Switch``) beside resource-variable writes (``enable_resource_variables`` TF1 code)."""
    ops = {n.op for n in graph_def.node}
    tf1_cond = "Switch" in ops and bool(ops & set(RESOURCE_WRITES))
    return tf1_cond or bool(ops & ({"VariableV2", "Variable"} | set(REF_TWINS) | set(ASSIGN_VALUES)))


def variable_writes(graph_def) -> list[str]:
    """The variable writes left in the graph (state a TF.js graph model cannot hold)."""
    return sorted(n.name for n in graph_def.node if n.op in WRITES)


def rewrite_ref_ops(graph_def, signature_inputs: set[str]) -> None:
    """Turn ref control flow on (now constant) variables into its plain twin, in place; a
    ``PlaceholderWithDefault`` that is not a signature input becomes ``Identity`` of its default (the only value
    it can take)."""
    for node in graph_def.node:
        if node.op in REF_TWINS:
            node.op = REF_TWINS[node.op]
        elif node.op == "PlaceholderWithDefault" and node.name not in signature_inputs:
            node.op = "Identity"
            node.attr["T"].type = node.attr["dtype"].type
            for attr in ("dtype", "shape"):
                if attr in node.attr:
                    del node.attr[attr]


def _const_bool(node, nodes: dict) -> bool | None:
    while node is not None and node.op == "Identity" and node.input:  # a flag's default, read through Identity
        node = nodes.get(_name(node.input[0]))
    if node is None or node.op != "Const" or node.attr["dtype"].type != 10:  # DT_BOOL
        return None
    value = import_tf().make_ndarray(node.attr["value"].tensor)  # proto3 stores False as no value at all
    return bool(value) if value.size == 1 else None


def prune_dead_branches(graph_def) -> int:
    """Cut the untaken side of every ``Switch`` whose predicate is a constant bool (through ``Identity`` nodes).

    A consumer of the dead output (data or control) is dead, and so is everything fed by a dead node, except a
    ``Merge``, which is dead only when all its data inputs are; a live ``Merge`` left with one live input becomes
    ``Identity`` of it (``value_index`` is then the constant the branch fixes, unused by inference graphs).
    Returns the number of nodes removed.
    """
    nodes = {n.name: n for n in graph_def.node}
    dead_ports = set()
    for n in graph_def.node:
        if n.op == "Switch" and (taken := _const_bool(nodes.get(_name(n.input[1])), nodes)) is not None:
            dead_ports.add((n.name, 0 if taken else 1))
    if not dead_ports:
        return 0
    dead: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in graph_def.node:
            if n.name in dead:
                continue
            flags = [_is_dead(i, dead, dead_ports) for i in n.input]
            data = [f for i, f in zip(n.input, flags) if not i.startswith("^")]
            if (n.op == "Merge" and data and all(data)) or (n.op != "Merge" and any(flags)):
                dead.add(n.name)
                changed = True
    for n in graph_def.node:
        if n.op == "Merge" and n.name not in dead:
            live = [i for i in n.input if not _is_dead(i, dead, dead_ports)]
            del n.input[:]
            n.input.extend(live)
            n.attr["N"].i = len([i for i in live if not i.startswith("^")])
    kept = [n for n in graph_def.node if n.name not in dead]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    _to_identities(graph_def, {name: port for name, port in dead_ports})
    return len(dead)


def _to_identities(graph_def, dead_port: dict[str, int]) -> None:
    """Each constant ``Switch`` becomes ``Identity`` of its data (read at the taken port, now port 0) and each
    one-input ``Merge`` whose ``value_index`` nobody reads becomes ``Identity``: no dynamic op is left for tfjs."""
    taken = {name: 1 - port for name, port in dead_port.items()}
    read_index = {_name(i) for n in graph_def.node for i in n.input if not i.startswith("^") and i.endswith(":1")}
    for n in graph_def.node:
        for k, tensor in enumerate(n.input):
            if not tensor.startswith("^") and _name(tensor) in taken:
                n.input[k] = _name(tensor)
    for n in graph_def.node:
        if n.name in taken:
            n.op = "Identity"
            del n.input[1]
        elif n.op == "Merge" and n.attr["N"].i == 1 and n.name not in read_index:
            n.op = "Identity"
            del n.attr["N"]


def _name(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _is_dead(tensor: str, dead: set[str], dead_ports: set) -> bool:
    name = _name(tensor)
    if name in dead:
        return True
    port = 0 if tensor.startswith("^") or ":" not in tensor else int(tensor.split(":")[1])
    if tensor.startswith("^"):
        return False  # a control edge from a live Switch fires whichever side it takes
    return (name, port) in dead_ports
