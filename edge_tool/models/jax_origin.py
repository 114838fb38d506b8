"""A SavedModel exported from JAX (Keras 3's ``model.export()`` on the JAX backend, jax2tf with native
serialization): its graph runs the model as ``XlaCallModule`` ops holding StableHLO, read from the MetaGraph
without running it. The TFLite converter lowers such graphs only in part; the way out is an export on the
TensorFlow backend, which edgetool makes itself from the model's ``.keras`` file."""

from __future__ import annotations

import functools
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.models.signatures import read_meta_graph

XLA_CALL_MODULE = "XlaCallModule"


@functools.lru_cache(maxsize=8)
def _count(saved_model: str, mtime_ns: int) -> int:
    try:
        mg = read_meta_graph(Path(saved_model))
    except ModelError:
        return 0
    count = sum(n.op == XLA_CALL_MODULE for n in mg.graph_def.node)
    return count + sum(n.op == XLA_CALL_MODULE for fn in mg.graph_def.library.function for n in fn.node_def)


def is_jax_export(saved_model: Path) -> bool:
    """True when the SavedModel's graph holds XlaCallModule ops (0 for a SavedModel that cannot be read)."""
    pb = Path(saved_model) / "saved_model.pb"
    return pb.is_file() and _count(str(saved_model), pb.stat().st_mtime_ns) > 0


def jax_way_out(model: Path) -> str:
    """What a JAX export is and the way out that works, one paragraph to follow a converter failure."""
    return (
        f" {model} is a JAX export: its graph runs the model as XlaCallModule ops (StableHLO from jax2tf, what Keras "
        "3's model.export() writes on the JAX backend), which the TFLite converter lowers only in part, and --batch "
        "does not change that. Export it on the TensorFlow backend instead: give edgetool the model's .keras file "
        "(model.save('model.keras'); edgetool loads it with TensorFlow and exports it itself, however it was "
        "trained), or run KERAS_BACKEND=tensorflow and model.export() there."
    )
