"""Ops tfjs 4.22 has a kernel for but reads wrong, rewritten into ops it computes right.

``MatrixBandPart(a, num_lower, num_upper)``: tfjs-converter's op mapper takes both band widths from input 1
(``num_lower``), so ``band_part(x, -1, 0)`` — the lower triangle, how Keras 3 builds a causal attention mask
(``MultiHeadAttention(use_causal_mask=True)``, ``keras.ops.tril``) — keeps the whole matrix in tfjs, silently (the
issue-35 model agreed on 36 % of samples). It becomes the mask it means, from plain ops: with i - j the row
minus the column index, keep ``(num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)``,
else 0.
"""

from __future__ import annotations

import numpy as np

from edge_tool.core.env import import_tf

_INT32 = 3  # DT_INT32


def _add(graph_def, name: str, op: str, inputs: list[str], **attrs):
    node = graph_def.node.add(name=name, op=op)
    node.input.extend(inputs)
    for key, value in attrs.items():
        if isinstance(value, bool):
            node.attr[key].b = value
        elif isinstance(value, int):
            node.attr[key].i = value
        else:
            node.attr[key].CopyFrom(value)
    return name


def _const(graph_def, name: str, value) -> str:
    tf = import_tf()
    value = np.asarray(value)
    node = graph_def.node.add(name=name, op="Const")
    node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    return name


def _dtype(enum: int):
    tf = import_tf()
    attr = tf.compat.v1.AttrValue()
    attr.type = enum
    return attr


def _last_dim(graph_def, p: str, shape: str, from_end: int) -> str:
    """Dimension ``-from_end`` of the int32 ``shape`` vector, as a scalar."""
    begin = _const(graph_def, f"{p}/begin{from_end}", np.array([-from_end], np.int32))
    end = _const(graph_def, f"{p}/end{from_end}", np.array([1 - from_end if from_end > 1 else 0], np.int32))
    step = _const(graph_def, f"{p}/step{from_end}", np.array([1], np.int32))
    i32 = _dtype(_INT32)
    return _add(
        graph_def,
        f"{p}/dim{from_end}",
        "StridedSlice",
        [shape, begin, end, step],
        T=i32,
        Index=i32,
        shrink_axis_mask=1,
        end_mask=0 if from_end > 1 else 1,
    )


def _as_int32(graph_def, p: str, ref: str, dtype: int, tag: str) -> str:
    if dtype == _INT32:
        return ref
    return _add(graph_def, f"{p}/{tag}_i32", "Cast", [ref], SrcT=_dtype(dtype), DstT=_dtype(_INT32), Truncate=False)


def rewrite_band_parts(graph_def) -> int:
    """Replace every main-graph MatrixBandPart by the plain-op mask it computes; returns how many."""
    bands = [n for n in graph_def.node if n.op == "MatrixBandPart"]
    i32 = _dtype(_INT32)
    for band in bands:
        a, name, t = band.input[0], band.name, band.attr["T"]
        p = name + "/tfjs"
        tindex = band.attr["Tindex"].type or _INT32
        t = _dtype(t.type)
        lower = _as_int32(graph_def, p, band.input[1], tindex, "lower")
        upper = _as_int32(graph_def, p, band.input[2], tindex, "upper")
        shape = _add(graph_def, f"{p}/shape", "Shape", [a], T=t, out_type=i32)
        zero, one = _const(graph_def, f"{p}/zero", np.int32(0)), _const(graph_def, f"{p}/one", np.int32(1))
        rows = _add(graph_def, f"{p}/rows", "Range", [zero, _last_dim(graph_def, p, shape, 2), one], Tidx=i32)
        cols = _add(graph_def, f"{p}/cols", "Range", [zero, _last_dim(graph_def, p, shape, 1), one], Tidx=i32)
        axis_col, axis_row = _const(graph_def, f"{p}/axis1", np.int32(1)), _const(graph_def, f"{p}/axis0", np.int32(0))
        rows = _add(graph_def, f"{p}/rows2d", "ExpandDims", [rows, axis_col], T=i32, Tdim=i32)
        cols = _add(graph_def, f"{p}/cols2d", "ExpandDims", [cols, axis_row], T=i32, Tdim=i32)
        below = _add(graph_def, f"{p}/i_minus_j", "Sub", [rows, cols], T=i32)
        above = _add(graph_def, f"{p}/j_minus_i", "Sub", [cols, rows], T=i32)
        keep = []
        for tag, width, dist in (("lower", lower, below), ("upper", upper, above)):
            unlimited = _add(graph_def, f"{p}/{tag}_all", "Less", [width, zero], T=i32)
            within = _add(graph_def, f"{p}/{tag}_within", "LessEqual", [dist, width], T=i32)
            keep.append(_add(graph_def, f"{p}/{tag}_keep", "LogicalOr", [unlimited, within]))
        mask = _add(graph_def, f"{p}/mask", "LogicalAnd", keep)
        zeros = _add(graph_def, f"{p}/zeros", "ZerosLike", [a], T=t)
        graph_def.node.remove(band)
        _add(graph_def, name, "SelectV2", [mask, a, zeros], T=t)
    return len(bands)
