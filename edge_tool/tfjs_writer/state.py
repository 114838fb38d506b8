"""A signature that keeps state between calls (Keras ``stateful=True``: resource variables written on every call) has
no TensorFlow.js graph model: a graph model holds constants only, so the state would be frozen at its initial value
and every call would start the stream again. The writer refuses such a signature with the ways out that work."""

from __future__ import annotations

from edge_tool.errors import ConversionError
from edge_tool.tfjs_writer.refvars import RESOURCE_WRITES

# The state as explicit inputs and outputs: what a TF.js graph model can carry (docs/streaming.md shows the code).
EXPLICIT_STATE = (
    "rebuild the recurrent layer with stateful=False and return_state=True, take its state as a second input "
    "(passed as initial_state) and return the new state as a second output, so the app feeds each call's state "
    "into the next (docs/streaming.md shows the code)"
)


class StatefulRefused(ConversionError):
    """A signature that keeps state between calls: no TensorFlow.js model, no demo page (``--litert`` included)."""


def resource_writes(graph_def) -> list[str]:
    """The resource-variable writes in the signature's graph and the functions it calls (its state updates)."""
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sorted({n.name for n in nodes if n.op in RESOURCE_WRITES})


def written_variables(fn) -> list[str]:
    """``name shape dtype`` of each variable the concrete function ``fn`` writes, followed from each write's resource
    input through the function calls to the captured variable; [] where that path cannot be followed."""
    graph_def = fn.graph.as_graph_def()
    library = {f.signature.name: f for f in graph_def.library.function}
    found: dict[str, str] = {}  # by captured placeholder: restored variables may share a name

    def walk(nodes, origin: dict[str, str], depth: int) -> None:
        for n in nodes:
            if n.op in RESOURCE_WRITES and n.input and n.input[0].split(":")[0] in origin:
                root = origin[n.input[0].split(":")[0]]
                found[root] = labels[root]
            f = n.attr["f"].func.name if "f" in n.attr else ""
            if f in library and depth < 16:
                args = [a.name for a in library[f].signature.input_arg]
                inner = {a: origin[i.split(":")[0]] for a, i in zip(args, n.input) if i.split(":")[0] in origin}
                walk(library[f].node_def, inner, depth + 1)

    by_handle = {id(v.handle): v for v in fn.graph.variables}
    labels = {}
    for external, internal in fn.graph.captures:
        v = by_handle.get(id(external))
        if v is not None:
            shape = "×".join(map(str, v.shape.as_list()))
            labels[internal.name.split(":")[0]] = f"{v.name.split(':')[0]} {shape} {v.dtype.name}"
    walk(graph_def.node, {k: k for k in labels}, 0)
    return sorted(found.values())


def refuse_stateful(graph_def, key: str, fn=None) -> None:
    """ConversionError (exit 2) when signature ``key`` (its GraphDef; ``fn``, its concrete function, names the
    variables) writes resource variables on each call."""
    writes = resource_writes(graph_def)
    if not writes:
        return
    writes = (written_variables(fn) if fn is not None else []) or writes
    shown = ", ".join(writes[:3]) + (f" and {len(writes) - 3} more" if len(writes) > 3 else "")
    raise StatefulRefused(
        f"The model keeps state between calls (its signature {key!r} writes {shown} on each call: a Keras "
        "stateful=True layer), which a TensorFlow.js graph model cannot hold (constants only), so edgetool writes "
        "no TF.js model and builds no demo page. Give the model its state as an explicit input and output instead: "
        f"{EXPLICIT_STATE}. For the app, `edgetool convert MODEL` writes .tflite files that carry the state (an app "
        "starts each stream in a new LiteRT Interpreter); the page's LiteRT.js engine was measured off the model's "
        "stream of calls."
    )
