"""Sizes a model container declares for its tensors, bounded before anything materializes them (issue 40, item 3).

A 1.5 MB ``.h5`` can declare a gzip-filtered 1.6 GB kernel, a tiny ``saved_model.pb`` a 3 GiB Const (one splatted
value), a checkpoint index a variable of any shape: h5py, TensorFlow and the TF.js writer would allocate them in
full. These read only the declarations — HDF5 dataset headers (``Dataset.shape``/``dtype`` read no data), the
``tensor_shape`` of every Const's ``value`` attribute in the graph and its function library, the variables'
shapes in the checkpoint index — and refuse the first tensor over ``max_tensor_bytes()`` naming it and its size.
"""

from __future__ import annotations

import math
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.parsers.limits import max_tensor_bytes, too_large

CONST_OPS = frozenset({"Const", "HostConst"})


def _check(what: str, name: str, shape, dtype: str, itemsize: int, limit: int) -> None:
    need = math.prod(max(int(d), 1) for d in shape) * max(int(itemsize), 1)
    if need > limit:
        raise too_large(what, name, tuple(int(d) for d in shape), dtype, need, limit, per=" as the file declares it")


def check_h5_datasets(h5file, path: Path | str) -> None:
    """ModelError naming the first dataset of the open h5py ``h5file`` whose declared size is over the limit."""
    import h5py

    limit = max_tensor_bytes()

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape:
            _check(f"{path}: HDF5 dataset", name, obj.shape, str(obj.dtype), obj.dtype.itemsize, limit)

    h5file.visititems(visit)


def graph_nodes(saved_model):
    for meta in saved_model.meta_graphs:
        for node in meta.graph_def.node:
            yield "", node
        for fn in meta.graph_def.library.function:
            for node in fn.node_def:
                yield f"function {fn.signature.name}: ", node


def check_graph_consts(saved_model, path: Path | str) -> None:
    """ModelError naming the first Const (graph or library function) whose ``value`` declares a tensor over the
    limit — a splat (one value for a huge shape) costs a few bytes in the file and the full size when built."""
    tf = import_tf()
    limit = max_tensor_bytes()
    for where, node in graph_nodes(saved_model):
        if node.op not in CONST_OPS or "value" not in node.attr:
            continue
        tensor = node.attr["value"].tensor
        shape = [d.size for d in tensor.tensor_shape.dim]
        try:
            dtype = tf.dtypes.as_dtype(tensor.dtype)
            name, size = dtype.name, dtype.size
        except (TypeError, ValueError):
            name, size = f"dtype {tensor.dtype}", 8
        _check(f"{path}: {where}Const", node.name, shape, name, size, limit)


def check_checkpoint_shapes(shapes: dict, dtypes: dict, index: Path | str) -> None:
    """ModelError naming the first variable of the checkpoint index whose declared shape is over the limit."""
    limit = max_tensor_bytes()
    for name in sorted(shapes):
        dtype = dtypes.get(name)
        size = getattr(dtype, "size", 8) if getattr(dtype, "is_numpy_compatible", True) else 8
        _check(f"{index}: variable", name, shapes[name] or (), getattr(dtype, "name", "?"), size, limit)
