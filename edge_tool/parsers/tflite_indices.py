"""Check every index a .tflite flatbuffer holds before anything follows one (the one check, for every command).

A flatbuffer is a web of indices: an operator names its input/output/intermediate tensors by position, a tensor
its buffer, an operator its opcode, a control-flow operator (WHILE, IF, CALL_ONCE, StableHLO ops) other
subgraphs, a signature its subgraph and tensors, the model its metadata buffers. A damaged or hostile file with an
operator pointing at tensor 99999 used to pass ``inspect`` with exit 0; LiteRT and our own readers would index out
of range later, or not at all. ``index_problems`` lists every index out of range (read with the lazy accessors, so
a memory map or a 2 GB file is not unpacked); ``check_indices`` raises one ModelError naming the file and the first
problems. A file the accessors cannot even walk is refused as damaged.
"""

from __future__ import annotations

from edge_tool.errors import ModelError
from edge_tool.parsers.tflite_schema import tflite_schema

MAX_LISTED = 5


def _bad(values, limit: int, optional: bool = False) -> list[int]:
    low = -1 if optional else 0
    return [int(v) for v in values if not low <= int(v) < limit]


def _vector(table, name: str):
    return getattr(table, f"{name}AsNumpy")() if getattr(table, f"{name}Length")() else ()


def _option_tables(schema, op):
    """The operator's builtin options tables (BuiltinOptions and BuiltinOptions2), as schema objects."""
    for kind, union, get in (
        (op.BuiltinOptionsType(), schema.BuiltinOptions, op.BuiltinOptions),
        (op.BuiltinOptions2Type(), schema.BuiltinOptions2, op.BuiltinOptions2),
    ):
        name = next((k for k, v in vars(union).items() if v == kind and not k.startswith("_")), None)
        table = get() if kind else None
        cls = getattr(schema, name, None) if name else None
        if table is not None and cls is not None:
            obj = cls()
            obj.Init(table.Bytes, table.Pos)
            yield name, obj


def _subgraph_refs(schema, op) -> list[tuple[str, int]]:
    """(option field, subgraph index) of every subgraph a control-flow operator names."""
    refs = []
    for name, obj in _option_tables(schema, op):
        for attr in dir(obj):
            if "Subgraph" not in attr or attr.endswith(("Length", "IsNone", "AsNumpy")) or attr.startswith("_"):
                continue
            if attr.endswith("Indices"):
                refs += [(f"{name}.{attr}", int(v)) for v in _vector(obj, attr)]
            else:
                refs.append((f"{name}.{attr}", int(getattr(obj, attr)())))
    return refs


def _operator_problems(schema, s: int, sg, codes: int, tensors: int, subgraphs: int) -> list[str]:
    problems = []
    for o in range(sg.OperatorsLength()):
        op = sg.Operators(o)
        where = f"subgraph {s} operator {o}"
        if not 0 <= op.OpcodeIndex() < codes:
            problems.append(f"{where} has opcode index {op.OpcodeIndex()}, but there are {codes} operator codes")
        for field, optional in (("Inputs", True), ("Outputs", True), ("Intermediates", False)):
            for i in _bad(_vector(op, field), tensors, optional):
                problems.append(f"{where} {field.lower()[:-1]} is tensor {i}, but the subgraph has {tensors} tensors")
        for field, i in _subgraph_refs(schema, op):
            if not 0 <= i < subgraphs:
                problems.append(f"{where} {field} is subgraph {i}, but the model has {subgraphs} subgraphs")
    return problems


def _subgraph_problems(schema, model, s: int, buffers: int) -> list[str]:
    sg = model.Subgraphs(s)
    tensors = sg.TensorsLength()
    problems = [
        f"subgraph {s} {field.lower()[:-1]} is tensor {i}, but the subgraph has {tensors} tensors"
        for field in ("Inputs", "Outputs")
        for i in _bad(_vector(sg, field), tensors)
    ]
    for t in range(tensors):
        b = sg.Tensors(t).Buffer()
        if not 0 <= b < max(buffers, 1):  # buffer 0 is the empty sentinel, even when the vector is missing
            problems.append(f"subgraph {s} tensor {t} uses buffer {b}, but the model has {buffers} buffers")
    problems += _operator_problems(schema, s, sg, model.OperatorCodesLength(), tensors, model.SubgraphsLength())
    return problems


def _signature_problems(model) -> list[str]:
    problems = []
    for d in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(d)
        s = sig.SubgraphIndex()
        if not 0 <= s < model.SubgraphsLength():
            problems.append(f"signature {d} names subgraph {s}, but the model has {model.SubgraphsLength()}")
            continue
        tensors = model.Subgraphs(s).TensorsLength()
        for field in ("Inputs", "Outputs"):
            for k in range(getattr(sig, f"{field}Length")()):
                i = getattr(sig, field)(k).TensorIndex()
                if not 0 <= i < tensors:
                    problems.append(
                        f"signature {d} {field.lower()[:-1]} {k} is tensor {i}, but subgraph {s} has {tensors} tensors"
                    )
    return problems


def index_problems(data) -> list[str]:
    """Every out-of-range index of the flatbuffer ``data`` (bytes, bytearray or a memory map), in file order."""
    schema = tflite_schema()
    model = schema.Model.GetRootAsModel(data, 0)
    buffers = model.BuffersLength()
    if not model.SubgraphsLength():
        return ["the model has no subgraph"]
    problems = []
    for s in range(model.SubgraphsLength()):
        problems += _subgraph_problems(schema, model, s, buffers)
    problems += _signature_problems(model)
    for m in range(model.MetadataLength()):
        b = model.Metadata(m).Buffer()
        if not 0 <= b < buffers:
            problems.append(f"metadata {m} uses buffer {b}, but the model has {buffers} buffers")
    problems += [
        f"metadata buffer {b}, but the model has {buffers} buffers"
        for b in _bad(_vector(model, "MetadataBuffer"), buffers)
    ]
    return problems


def check_indices(data, path) -> None:
    """ModelError naming ``path`` when the flatbuffer ``data`` holds an index out of range or cannot be walked."""
    try:
        problems = index_problems(data)
    except Exception as exc:  # the accessors raise assorted errors (struct, IndexError, ...) on a damaged file
        raise ModelError(
            f"{path} has a TFLite header but its flatbuffer cannot be walked ({type(exc).__name__}: "
            f"{str(exc)[:200]}); it is truncated or damaged. Convert the model again."
        ) from None
    if problems:
        more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
        raise ModelError(
            f"{path} is a damaged .tflite flatbuffer: {'; '.join(problems[:MAX_LISTED])}{more}. "
            "A runtime would read out of range; convert the model again."
        )
