"""The bytes of weights a model declares — what its converted file will hold — read from the declarations only, never
loaded (issue 43, item 2): convert refuses a .tflite over FlatBuffers' 2 GiB before converting, demo says what a
first visit downloads before it builds a page."""

from __future__ import annotations

import math
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.errors import EdgeToolError
from edge_tool.parsers.declared_sizes import CONST_OPS, graph_nodes
from edge_tool.parsers.saved_model_proto import parse_saved_model


def declared_weight_bytes(path: Path | str) -> int | None:
    """The bytes of weights a model declares, read from its declarations only (never loaded): a SavedModel's
    checkpoint-index variables plus its graph Consts, or an ``.h5``'s datasets; None for any other container or
    when the declarations cannot be read (the loaders then name the problem)."""
    path = Path(path)
    try:
        if path.is_dir() and (path / "saved_model.pb").is_file():
            return _saved_model_bytes(path)
        if path.is_file() and path.suffix.lower() in (".h5", ".hdf5"):
            return _h5_bytes(path)
    except (EdgeToolError, OSError, ValueError, IndexError):  # the loaders name what is unreadable, not this estimate
        return None
    return None


def _saved_model_bytes(path: Path) -> int:
    tf = import_tf()
    total = 0
    for _, node in graph_nodes(parse_saved_model(path)):
        if node.op in CONST_OPS and "value" in node.attr:
            tensor = node.attr["value"].tensor
            size = _itemsize(tf, tensor.dtype)
            total += math.prod(max(d.size, 0) for d in tensor.tensor_shape.dim) * size
    if (path / "variables" / "variables.index").is_file():
        try:
            reader = tf.train.load_checkpoint(str(path / "variables" / "variables"))
        except tf.errors.OpError as exc:
            raise ValueError(str(exc)) from None
        dtypes = reader.get_variable_to_dtype_map()
        for name, shape in reader.get_variable_to_shape_map().items():
            size = _itemsize(tf, dtypes.get(name))
            total += math.prod(max(int(d), 0) for d in shape or ()) * size
    return total


def _h5_bytes(path: Path) -> int:
    import h5py

    total = 0

    def visit(_name, obj):
        nonlocal total
        if isinstance(obj, h5py.Dataset) and obj.shape:
            total += math.prod(obj.shape) * obj.dtype.itemsize

    with h5py.File(path, "r") as f:
        (f["model_weights"] if "model_weights" in f else f).visititems(visit)  # not the optimizer's slots
    return total


def _itemsize(tf, dtype) -> int:
    try:
        dtype = tf.dtypes.as_dtype(dtype)
    except (TypeError, ValueError):
        return 0
    return dtype.size if dtype.is_numpy_compatible and dtype != tf.string else 0
