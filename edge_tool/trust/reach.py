"""What a SavedModel's MetaGraph executes: the graph nodes feeding given tensors, the library functions they call
(``f`` attributes, While/If/Case branches, function lists: transitively), and what loading the model and calling one
signature runs (``executed_by``), read from the protobuf alone."""

from __future__ import annotations

from collections import deque


def strip_ref(ref: str) -> str:
    return ref.lstrip("^").split(":", 1)[0]


def called_functions(node) -> list[str]:
    """Names of the functions a node calls through its attributes (``f``, ``then_branch``, ``body``, lists)."""
    names = []
    for value in node.attr.values():
        if value.HasField("func"):
            names.append(value.func.name)
        if value.HasField("list"):
            names.extend(f.name for f in value.list.func)
    return names


def closure(functions: dict, names) -> set[str]:
    """``names`` and every library function they call, transitively."""
    called, pending = set(names), deque(names)
    while pending:
        fn = functions.get(pending.popleft())
        for node in fn.node_def if fn is not None else ():
            for inner in called_functions(node):
                if inner not in called:
                    called.add(inner)
                    pending.append(inner)
    return called


def subgraph(mg, roots: list[str]) -> tuple[set[str], set[str]]:
    """(graph node names feeding ``roots``, names of the library functions those nodes call, transitively)."""
    nodes = {n.name: n for n in mg.graph_def.node}
    functions = {f.signature.name: f for f in mg.graph_def.library.function}
    seen, queue = set(), deque(strip_ref(r) for r in roots if r)
    called: set[str] = set()
    while queue:
        name = queue.popleft()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        queue.extend(strip_ref(i) for i in nodes[name].input)
        called.update(called_functions(nodes[name]))
    return seen, closure(functions, called)


INIT_COLLECTIONS = ("saved_model_main_op", "main_op", "legacy_init_op", "table_initializer")


def _loader_functions(mg) -> set[str]:
    """Concrete functions ``tf.saved_model.load`` runs by itself: the methods of resource objects (lookup tables'
    creator, initialiser, destroyer) and the save/restore functions of saveable objects."""
    nodes = mg.object_graph_def.nodes
    ids: set[int] = set()
    for node in nodes:
        if node.WhichOneof("kind") == "resource":
            ids.update(c.node_id for c in node.children)
        for saveable in node.saveable_objects.values():
            ids.update((saveable.save_function, saveable.restore_function))
    names: set[str] = set()
    for i in ids:
        kind = nodes[i].WhichOneof("kind") if 0 <= i < len(nodes) else None
        if kind == "function":
            names.update(nodes[i].function.concrete_functions)
        elif kind == "bare_concrete_function":
            names.add(nodes[i].bare_concrete_function.concrete_function_name)
    return names


_INIT_SIGNATURE = "__saved_model_init_op"


def executed_by(mg, signature: str) -> tuple[set[str], set[str]] | None:
    """(graph node names, library function names) that loading ``mg`` and calling ``signature`` executes; None when
    ``mg`` has no such signature (then everything is judged)."""
    if signature not in mg.signature_def:
        return None
    roots = [
        t.name
        for key in (signature, _INIT_SIGNATURE)
        if key in mg.signature_def
        for t in [*mg.signature_def[key].inputs.values(), *mg.signature_def[key].outputs.values()]
    ]
    roots += [v for key in INIT_COLLECTIONS if key in mg.collection_def for v in mg.collection_def[key].node_list.value]
    roots.append(mg.saver_def.restore_op_name)
    nodes, functions = subgraph(mg, roots)
    library = {f.signature.name: f for f in mg.graph_def.library.function}
    return nodes, functions | closure(library, _loader_functions(mg))
