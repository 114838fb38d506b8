"""Ops tfjs 4.22 reads wrong, or runs on one backend only, rewritten into ops it computes right everywhere.

``MatrixBandPart(a, num_lower, num_upper)``: tfjs-converter's op mapper takes both band widths from input 1
(``num_lower``), so ``band_part(x, -1, 0)`` — the lower triangle, how Keras 3 builds a causal attention mask
(``MultiHeadAttention(use_causal_mask=True)``, ``keras.ops.tril``) — keeps the whole matrix in tfjs, silently (the
issue-35 model agreed on 36 % of samples). It becomes the mask it means, from plain ops: with i - j the row
minus the column index, keep ``(num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)``,
else 0.

``Einsum``: only tfjs' cpu backend has a kernel, so attention written with einsum (Keras 3's MultiHeadAttention)
would not run on wasm, which the demo page and eval use. A two-operand einsum that is a batched matmul becomes
Transpose + BatchMatMulV2 (+ Transpose).
"""

from __future__ import annotations

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.models.graphdef import add_const

_INT32, _BOOL = 3, 10  # DT_INT32, DT_BOOL


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


def _dtype(enum: int):
    tf = import_tf()
    attr = tf.compat.v1.AttrValue()
    attr.type = enum
    return attr


def _last_dim(graph_def, p: str, shape: str, from_end: int) -> str:
    """Dimension ``-from_end`` of the int32 ``shape`` vector, as a scalar."""
    begin = add_const(graph_def, f"{p}/begin{from_end}", np.array([-from_end], np.int32))
    end = add_const(graph_def, f"{p}/end{from_end}", np.array([1 - from_end if from_end > 1 else 0], np.int32))
    step = add_const(graph_def, f"{p}/step{from_end}", np.array([1], np.int32))
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
        zero, one = add_const(graph_def, f"{p}/zero", np.int32(0)), add_const(graph_def, f"{p}/one", np.int32(1))
        rows = _add(graph_def, f"{p}/rows", "Range", [zero, _last_dim(graph_def, p, shape, 2), one], Tidx=i32)
        cols = _add(graph_def, f"{p}/cols", "Range", [zero, _last_dim(graph_def, p, shape, 1), one], Tidx=i32)
        axis_col, axis_row = (
            add_const(graph_def, f"{p}/axis1", np.int32(1)),
            add_const(graph_def, f"{p}/axis0", np.int32(0)),
        )
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
        graph_def.node.remove(band)
        if t.type == _BOOL:  # tfjs' wasm Select reads bool operands as float: a plain and says the same
            _add(graph_def, name, "LogicalAnd", [mask, a])
        else:
            _add(graph_def, name, "SelectV2", [mask, a, _add(graph_def, f"{p}/zeros", "ZerosLike", [a], T=t)], T=t)
    return len(bands)


def _einsum_plan(equation: str) -> tuple[list[int], list[int], list[int]] | None:
    """(perm of a, perm of b, perm of a@b to the output) when ``a,b->out`` is a batched matmul with one free
    index per operand and one contracted index (how attention's scores and weighted sums are written), else None."""
    try:
        inputs, out = equation.replace(" ", "").split("->")
        a, b = inputs.split(",")
    except ValueError:
        return None
    if "." in equation or len(set(a)) != len(a) or len(set(b)) != len(b) or len(set(out)) != len(out):
        return None
    batch = [c for c in out if c in a and c in b]
    contracted = [c for c in a if c in b and c not in out]
    a_free, b_free = [c for c in a if c not in b], [c for c in b if c not in a]
    if len(contracted) != 1 or len(a_free) != 1 or len(b_free) != 1 or set(a_free + b_free) - set(out):
        return None
    if len(batch) + 2 != len(out) or len(a) != len(batch) + 2 or len(b) != len(batch) + 2:
        return None
    product = batch + a_free + b_free
    return (
        [a.index(c) for c in batch + a_free + contracted],
        [b.index(c) for c in batch + contracted + b_free],
        [product.index(c) for c in out],
    )


def rewrite_einsums(graph_def) -> int:
    """Replace two-operand Einsums that are batched matmuls by Transpose + BatchMatMulV2 (tfjs' wasm backend has
    no Einsum kernel; the demo page and eval run on wasm); returns how many."""
    done = 0
    for node in [n for n in graph_def.node if n.op == "Einsum" and len(n.input) == 2]:
        plan = _einsum_plan(node.attr["equation"].s.decode())
        if plan is None:
            continue
        name, t, (x, y) = node.name, _dtype(node.attr["T"].type), list(node.input)
        p, i32 = name + "/tfjs", _dtype(_INT32)
        operands = []
        for tag, ref, perm in (("a", x, plan[0]), ("b", y, plan[1])):
            if perm == sorted(perm):
                operands.append(ref)
                continue
            order = add_const(graph_def, f"{p}/{tag}_perm", np.array(perm, np.int32))
            operands.append(_add(graph_def, f"{p}/{tag}_t", "Transpose", [ref, order], T=t, Tperm=i32))
        graph_def.node.remove(node)
        if plan[2] == sorted(plan[2]):
            _add(graph_def, name, "BatchMatMulV2", operands, T=t, adj_x=False, adj_y=False)
        else:
            product = _add(graph_def, f"{p}/matmul", "BatchMatMulV2", operands, T=t, adj_x=False, adj_y=False)
            order = add_const(graph_def, f"{p}/out_perm", np.array(plan[2], np.int32))
            _add(graph_def, name, "Transpose", [product, order], T=t, Tperm=i32)
        done += 1
    return done
