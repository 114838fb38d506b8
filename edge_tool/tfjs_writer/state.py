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


def resource_writes(graph_def) -> list[str]:
    """The resource-variable writes in the signature's graph and the functions it calls (its state updates)."""
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sorted({n.name for n in nodes if n.op in RESOURCE_WRITES})


def refuse_stateful(graph_def, model, key: str) -> None:
    """ConversionError (exit 2) when signature ``key`` of ``model`` writes resource variables on each call."""
    writes = resource_writes(graph_def)
    if not writes:
        return
    shown = ", ".join(writes[:3]) + (f" and {len(writes) - 3} more" if len(writes) > 3 else "")
    raise ConversionError(
        f"{model}'s signature {key!r} keeps state between calls: it writes {len(writes)} resource variable"
        f"{'s' if len(writes) != 1 else ''} on each call ({shown}), as a Keras stateful=True layer does. A "
        "TensorFlow.js graph model holds constants only, so it would forget the state and restart the stream on "
        "every call; edgetool does not write one. The TFLite formats carry the state (`edgetool convert "
        f"{model}`; an app starts each stream in a new LiteRT Interpreter), and `edgetool demo {model} --litert` "
        f"builds the page from such a .tflite (LiteRT.js runs its variable ops). For TensorFlow.js, {EXPLICIT_STATE}."
    )
