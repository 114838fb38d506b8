"""Find side-effect ops (``side_effects.SIDE_EFFECT_OPS``) in a SavedModel's graphs or a .tflite file's Flex ops,
reading the protobuf / flatbuffer only (nothing is loaded into TensorFlow or an interpreter).

Every MetaGraph is walked. Given the signature a command runs, only what loading the model and calling that
signature executes is judged: the graph nodes feeding the signature, the init collections and the saver's restore op,
the functions they call (``f`` attributes, While/If/Case branches, lists: transitively) and the functions the TF2
loader runs by itself (resources' ``_create_resource``/``_initialize``/``_destroy_resource``, saveable objects'
save/restore functions). A function nothing of these reaches (a Keras layer's ``adapt_step``, another signature) is
never executed, so it is not judged. Without a signature (or one the MetaGraph does not have) every function of the
library is walked, called or not. Checkpoint ops are allowed only where the
MetaGraph's own saver puts them: ``SaveV2``/``MergeV2Checkpoints`` in the subgraph that computes
``saver_def.save_tensor_name`` and ``RestoreV2`` in the one that runs ``saver_def.restore_op_name`` (graph nodes
that feed them and the functions those nodes call, as long as nothing outside the saver calls those functions too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flatbuffers import flexbuffers

from edge_tool.calibration.serial import Record
from edge_tool.errors import ModelError
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.saved_model_proto import parse_saved_model
from edge_tool.parsers.tflite_schema import tflite_schema
from edge_tool.trust.reach import INIT_COLLECTIONS, called_functions, closure, executed_by, strip_ref, subgraph
from edge_tool.trust.side_effects import CHECKPOINT_OPS, CONDITIONAL, effect_of

_SAVE_OPS = frozenset({"Save", "SaveV2", "SaveSlices", "MergeV2Checkpoints"})
_RESTORE_OPS = CHECKPOINT_OPS - _SAVE_OPS


@dataclass(frozen=True)
class OpFinding(Record):
    """A side-effect op found in a model: the op, what it does, and where (``graph`` or ``function NAME``)."""

    op: str
    effect: str
    where: tuple[str, ...]

    def describe(self, limit: int = 3) -> str:
        """``WriteFile (writes files) in function __inference_serve_12``."""
        places = ", ".join(self.where[:limit]) + (
            f" and {len(self.where) - limit} more" if len(self.where) > limit else ""
        )
        return f"{self.op} ({self.effect}) in {places}"


def _run_by_loaders(mg) -> set[str]:
    """Graph nodes a loader or a signature call runs: ancestors of every signature tensor and init-op collection."""
    roots = [t.name for sig in mg.signature_def.values() for t in [*sig.inputs.values(), *sig.outputs.values()]]
    roots += [v for key in INIT_COLLECTIONS if key in mg.collection_def for v in mg.collection_def[key].node_list.value]
    return subgraph(mg, roots)[0]


def _reached_otherwise(mg, saver_nodes: set[str], saver_fns: set[str]) -> set[str]:
    """Functions reachable from outside the saver: graph nodes outside its subgraphs, functions outside its closure
    (a signature that calls the saver's save function with its own path is not the saver), object methods."""
    functions = {f.signature.name: f for f in mg.graph_def.library.function}
    roots = {f for n in mg.graph_def.node if n.name not in saver_nodes for f in called_functions(n)}
    roots |= {name for name in functions if name not in saver_fns} | set(mg.object_graph_def.concrete_functions)
    return closure(functions, roots)


_TABLE_FROM_FILE = frozenset({"InitializeTableFromTextFile", "InitializeTableFromTextFileV2"})


def _reads_own_asset(mg, fn, node, callers: dict) -> bool:
    """True when ``node`` (a text-file table initialiser in function ``fn``) reads a file of the SavedModel's own
    ``assets/``, a lookup layer's vocabulary: its filename is a captured argument of ``fn`` that the object graph
    binds to an asset object, every graph node calling ``fn`` passes an asset path there too (the TF1-style init
    op), and no other function calls ``fn`` (it could pass any path). ``callers``: function -> calling nodes."""
    name, args = fn.signature.name, [a.name for a in fn.signature.input_arg]
    concrete = mg.object_graph_def.concrete_functions.get(name)
    if concrete is None or len(node.input) < 2 or node.input[1] not in args:
        return False
    index = args.index(node.input[1])
    capture = index - (len(args) - len(concrete.bound_inputs))
    objects = mg.object_graph_def.nodes
    if not 0 <= capture < len(concrete.bound_inputs) or concrete.bound_inputs[capture] >= len(objects):
        return False
    if objects[concrete.bound_inputs[capture]].WhichOneof("kind") != "asset":
        return False
    graph = {n.name: n for n in mg.graph_def.node}
    assets = {strip_ref(a.tensor_info.name) for a in mg.asset_file_def}
    for where, call in callers.get(name, ()):
        data = [i for i in call.input if not i.startswith("^")]
        if where != "graph" or index >= len(data) or not _asset_path(graph, strip_ref(data[index]), assets):
            return False
    return True


def _asset_path(graph: dict, name: str, assets: set[str]) -> bool:
    """True when graph node ``name`` is an asset path tensor, or reads a variable only ever assigned one."""
    node = graph.get(name)
    if node is None or name in assets:
        return node is not None
    if node.op != "ReadVariableOp" or not node.input:
        return False
    handle = strip_ref(node.input[0])
    assigns = [n for n in graph.values() if n.op == "AssignVariableOp" and n.input and strip_ref(n.input[0]) == handle]
    return bool(assigns) and all(len(n.input) > 1 and strip_ref(n.input[1]) in assets for n in assigns)


def _callers(mg) -> dict:
    """function name -> [(``"graph"`` or the calling function's name, calling node)]."""
    found: dict = {}
    for node in mg.graph_def.node:
        for f in called_functions(node):
            found.setdefault(f, []).append(("graph", node))
    for fn in mg.graph_def.library.function:
        for node in fn.node_def:
            for f in called_functions(node):
                found.setdefault(f, []).append((fn.signature.name, node))
    return found


def _attrs(node) -> dict:
    names = CONDITIONAL.get(node.op, ((), None))[0]
    return {a: node.attr[a].s.decode("utf-8", "replace") for a in names if a in node.attr}


def _scan_meta_graph(mg, found: dict, signature: str | None = None) -> None:
    save_nodes, save_fns = subgraph(mg, [mg.saver_def.save_tensor_name])
    restore_nodes, restore_fns = subgraph(mg, [mg.saver_def.restore_op_name])
    run = _run_by_loaders(mg)  # a signature output that depends on the saver's SaveV2 is not the saver
    save_nodes, restore_nodes = save_nodes - run, restore_nodes - run
    shared = _reached_otherwise(mg, save_nodes | restore_nodes, save_fns | restore_fns)
    save_fns, restore_fns = save_fns - shared, restore_fns - shared

    def visit(node, where: str, in_save: bool, in_restore: bool) -> None:
        if (node.op in _SAVE_OPS and in_save) or (node.op in _RESTORE_OPS and in_restore):
            return
        effect = effect_of(node.op, _attrs(node))
        if effect is not None:
            found.setdefault((node.op, effect), []).append(where)

    reached = executed_by(mg, signature) if signature else None
    for node in mg.graph_def.node:
        if reached is None or node.name in reached[0]:
            visit(node, "graph", node.name in save_nodes, node.name in restore_nodes)
    callers = _callers(mg)
    for fn in mg.graph_def.library.function:
        name = fn.signature.name
        if reached is not None and name not in reached[1]:
            continue
        for node in fn.node_def:
            if node.op in _TABLE_FROM_FILE and _reads_own_asset(mg, fn, node, callers):
                continue
            visit(node, f"function {name}", name in save_fns, name in restore_fns)


def scan_saved_model(path: Path, signature: str | None = None) -> tuple[OpFinding, ...]:
    """Every side-effect op of the SavedModel directory ``path`` that loading it and calling ``signature``
    executes (None: every op of every function); ModelError for a malformed protobuf."""
    sm = parse_saved_model(Path(path), "; edgetool scans it before running anything and refuses it.")
    found: dict = {}
    for mg in sm.meta_graphs:
        _scan_meta_graph(mg, found, signature)
    return tuple(OpFinding(op, effect, tuple(dict.fromkeys(where))) for (op, effect), where in sorted(found.items()))


def scan_tflite(path: Path) -> tuple[OpFinding, ...]:
    """Flex ops of a .tflite file that are side-effect ops (``FlexWriteFile``…); ModelError when unreadable."""
    data = read_tflite(path)  # a regular file of at most 2 GiB, every flatbuffer index in range
    schema = tflite_schema()
    found: dict = {}
    try:
        model = schema.Model.GetRootAsModel(bytearray(data), 0)
        codes = [model.OperatorCodes(i).CustomCode() for i in range(model.OperatorCodesLength())]
        flex = {i: c.decode("utf-8", "replace")[4:] for i, c in enumerate(codes) if c and c.startswith(b"Flex")}
        for i, op in flex.items():
            for attrs in _flex_attrs(model, i, op):
                effect = effect_of(op, attrs)
                if effect is not None:
                    found.setdefault((f"Flex{op}", effect), []).append("a Flex (select TF) op")
    except Exception as exc:
        raise ModelError(
            f"{path} is not a readable TFLite flatbuffer ({type(exc).__name__}); edgetool scans it "
            "for Flex ops before running it and refuses it."
        ) from None
    return tuple(OpFinding(op, effect, ("a Flex (select TF) op",)) for (op, effect) in sorted(found))


def _flex_attrs(model, code_index: int, op: str) -> list[dict]:
    """String attributes of each operator using Flex op ``op`` (only for ops whose flag depends on them)."""
    if op not in CONDITIONAL:
        return [{}]
    from tensorflow.core.framework import node_def_pb2

    names, out = CONDITIONAL[op][0], []
    for s in range(model.SubgraphsLength()):
        sg = model.Subgraphs(s)
        for k in range(sg.OperatorsLength()):
            operator = sg.Operators(k)
            if operator.OpcodeIndex() != code_index:
                continue
            node = node_def_pb2.NodeDef()
            root = flexbuffers.GetRoot(bytearray(operator.CustomOptionsAsNumpy().tobytes()))
            node.ParseFromString(bytes(root.AsVector[1].AsStringBytes))
            out.append({a: node.attr[a].s.decode("utf-8", "replace") for a in names if a in node.attr})
    return out
