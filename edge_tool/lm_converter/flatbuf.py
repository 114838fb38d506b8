"""Two rewrites of a multi-signature LM .tflite, each checked by the self-check that follows (never trusted):

- ``dedupe_buffers``: tensors whose constant bytes are identical share one buffer. TensorFlow's converter shares a
  weight between the prefill and decode subgraphs; ai-edge-quantizer 0.10 writes one copy per subgraph (and a float
  copy of a tied embedding per subgraph), which made a weight-only int8 LM larger than its fp32 file.
- ``gather_to_embedding_lookup``: a GATHER of rows (axis 0, no batch dims) of a constant float table becomes
  EMBEDDING_LOOKUP, the op ai-edge-quantizer's weight-only recipes quantize (0.10 leaves GATHER tables in float).
"""

from __future__ import annotations

import hashlib

import flatbuffers

from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema


def _load(data: bytes):
    schema = tflite_schema()
    return schema, schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))


def _save(model) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def dedupe_buffers(data: bytes) -> bytes:
    """``data`` with every tensor pointing at the first buffer of identical non-empty bytes (the others emptied)."""
    _, model = _load(data)
    first: dict[str, int] = {}
    remap: dict[int, int] = {}
    for i, buf in enumerate(model.buffers):
        if buf.data is None or len(buf.data) == 0 or (buf.offset or 0) > 1:
            continue
        key = hashlib.sha256(bytes(buf.data)).hexdigest()
        if key in first:
            remap[i] = first[key]
        else:
            first[key] = i
    if not remap:
        return data
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.buffer in remap:
                t.buffer = remap[t.buffer]
    for i in remap:
        model.buffers[i].data = None
    return _save(model)


def gather_to_embedding_lookup(data: bytes, rows: int) -> tuple[bytes, int]:
    """``data`` with each row-GATHER of a constant float table of ``rows`` rows (the vocabulary: the token embedding,
    not a position or RoPE table) as EMBEDDING_LOOKUP; (bytes, operators rewritten)."""
    schema, model = _load(data)
    ops = enum_names(schema.BuiltinOperator)
    gather = next((i for i, c in enumerate(model.operatorCodes) if ops.get(_code(c)) == "GATHER"), None)
    if gather is None:
        return data, 0
    lookup = _opcode(schema, model, schema.BuiltinOperator.EMBEDDING_LOOKUP)
    reshape = _opcode(schema, model, schema.BuiltinOperator.RESHAPE)
    done = 0
    for sg in model.subgraphs:
        rewritten = []
        for op in sg.operators:
            if op.opcodeIndex != gather or not _row_gather(schema, model, sg, op, rows):
                rewritten.append(op)
                continue
            rewritten += _as_lookup(schema, model, sg, op, lookup, reshape)
            done += 1
        sg.operators = rewritten
    return (_save(model), done) if done else (data, 0)


def _as_lookup(schema, model, sg, op, lookup: int, reshape: int) -> list:
    """EMBEDDING_LOOKUP (1-D ids, (ids, table) order) for a GATHER, with RESHAPEs around it when the ids are not 1-D."""
    table, ids, out = int(op.inputs[0]), int(op.inputs[1]), int(op.outputs[0])
    op.opcodeIndex, op.builtinOptionsType, op.builtinOptions = lookup, schema.BuiltinOptions.NONE, None
    shape = [int(d) for d in sg.tensors[ids].shape]
    if len(shape) == 1:
        op.inputs = [ids, table]
        return [op]
    n, width = int(_prod(shape)), int(sg.tensors[table].shape[1])
    flat_ids = _tensor(schema, model, sg, sg.tensors[ids], [n], "/flat_ids")
    flat_out = _tensor(schema, model, sg, sg.tensors[out], [n, width], "/flat_rows")
    op.inputs, op.outputs = [flat_ids, table], [flat_out]
    before = _reshape_op(schema, reshape, ids, flat_ids, [n])
    after = _reshape_op(schema, reshape, flat_out, out, [int(d) for d in sg.tensors[out].shape])
    return [before, op, after]


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def _tensor(schema, model, sg, like, shape: list[int], suffix: str) -> int:
    """A new run-time tensor of ``like``'s type and ``shape`` (an empty buffer of its own); its index."""
    t = schema.TensorT()
    t.shape, t.type, t.name = shape, like.type, (like.name or b"t") + suffix.encode()
    model.buffers.append(schema.BufferT())
    t.buffer = len(model.buffers) - 1
    sg.tensors.append(t)
    return len(sg.tensors) - 1


def _reshape_op(schema, opcode: int, source: int, target: int, shape: list[int]):
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = opcode, [source], [target]
    op.builtinOptionsType = schema.BuiltinOptions.ReshapeOptions
    op.builtinOptions = schema.ReshapeOptionsT()
    op.builtinOptions.newShape = shape
    return op


def _code(code) -> int:
    return max(code.builtinCode, code.deprecatedBuiltinCode)


def _opcode(schema, model, builtin: int) -> int:
    for i, c in enumerate(model.operatorCodes):
        if _code(c) == builtin:
            return i
    code = schema.OperatorCodeT()
    code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, min(builtin, 127), 1
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _row_gather(schema, model, sg, op, rows: int) -> bool:
    """A GATHER along axis 0 without batch dims, of a rank-2 float32 constant of ``rows`` rows by int32 ids."""
    opts = op.builtinOptions
    if opts is None or getattr(opts, "axis", 0) != 0 or getattr(opts, "batchDims", 0) != 0:
        return False
    table, ids = sg.tensors[op.inputs[0]], sg.tensors[op.inputs[1]]
    return (
        is_constant(model, table)
        and table.shape is not None
        and len(table.shape) == 2
        and int(table.shape[0]) == rows
        and table.type == schema.TensorType.FLOAT32
        and ids.type == schema.TensorType.INT32
        and ids.shape is not None
        and all(int(d) > 0 for d in ids.shape)
        and op.outputs is not None
        and all(int(d) > 0 for d in sg.tensors[op.outputs[0]].shape)
    )
