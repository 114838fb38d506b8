"""Read what a model takes and gives without running it: SavedModel dirs, Keras files, .tflite files (a TFJS
model.json: ``parsers.tfjs_manifest.read_graph_model_json``); and run a SavedModel's signature."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from edge_tool.calibration.safe_open import not_a_file
from edge_tool.calibration.spec import SignatureInfo, TensorSpec
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.litert.runtime import load_interpreter
from edge_tool.parsers.checkpoint import check_variables
from edge_tool.parsers.saved_model_proto import parse_saved_model
from edge_tool.parsers.tflite_model import _unpack
from edge_tool.trust.guard import require_no_side_effects

SERVING = "serving_default"


def validate_saved_model_dir(path: Path) -> None:
    """Raise ModelError unless ``path`` is a directory holding saved_model.pb(txt)."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Expected a SavedModel directory at {path}, but nothing is there.")
    if not path.is_dir():
        raise ModelError(f"Expected a SavedModel directory, but {path} is a file.")
    for name in ("saved_model.pb", "saved_model.pbtxt"):
        if os.path.lexists(path / name) and not_a_file(path / name):
            raise ModelError(f"Expected a SavedModel directory, but its {path / name} {not_a_file(path / name)}.")
    if not ((path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()):
        found = sorted(p.name for p in path.iterdir())[:8]
        raise ModelError(
            f"Expected a SavedModel directory (containing saved_model.pb), but {path} holds {found or 'nothing'}."
        )


def read_meta_graph(path: Path):
    """The first MetaGraphDef of the SavedModel at ``path``, its variables checked (``checkpoint.check_variables``);
    ModelError naming the file when either is unreadable."""
    validate_saved_model_dir(path)

    sm = parse_saved_model(path, ".")
    if not sm.meta_graphs:
        raise ModelError(f"{path} holds a SavedModel with no MetaGraph.")
    check_variables(Path(path))
    return sm.meta_graphs[0]


def _tensor_infos(tensor_map) -> tuple[TensorSpec, ...]:
    from tensorflow.python.framework import dtypes

    infos = []
    for name in sorted(tensor_map):
        t = tensor_map[name]
        shape = (
            None
            if t.tensor_shape.unknown_rank
            else tuple(None if d.size < 0 else int(d.size) for d in t.tensor_shape.dim)
        )
        try:
            dtype = dtypes.as_dtype(t.dtype).as_numpy_dtype.__name__
        except TypeError:
            raise ModelError(
                f"signature tensor {name!r} has an unknown dtype (enum {t.dtype}): the SavedModel "
                "is corrupt or from an incompatible TensorFlow."
            ) from None
        infos.append(TensorSpec(name, dtype, shape))
    return tuple(infos)


def signature_keys(path: Path) -> list[str]:
    """Callable signature keys of a SavedModel (init ops excluded)."""
    mg = read_meta_graph(path)
    return sorted(k for k in mg.signature_def if not k.startswith("__"))


def signature_note(path: Path, key: str | None) -> str | None:
    """ "signature: KEY (of A, B, C; ...)" when the SavedModel at ``path`` has several signatures, else None."""
    keys = signature_keys(path) if (Path(path) / "saved_model.pb").is_file() else []  # not a TFJS dir / a file
    if len(keys) < 2:
        return None
    return f"signature: {key or SERVING} (of {', '.join(keys)}; --signature NAME picks another)"


def saved_model_signature(path: Path, key: str = SERVING) -> SignatureInfo:
    """SignatureInfo of ``key`` read from saved_model.pb; ModelError when the signature is missing."""
    mg = read_meta_graph(path)
    if key not in mg.signature_def:
        found = sorted(k for k in mg.signature_def if not k.startswith("__"))
        raise ModelError(
            f"Expected a {key!r} signature in the SavedModel at {path}, but it has "
            f"{found or 'no signatures'}. "
            + ("Pick one with --signature NAME, or re-export it with a " if found else "Re-export it with a ")
            + "serving signature "
            "(tf.saved_model.save(..., signatures=...), Keras model.save(), or Keras 3 model.export())."
        )
    sig = mg.signature_def[key]
    return SignatureInfo(key, _tensor_infos(sig.inputs), _tensor_infos(sig.outputs))


def saved_model_flavor(path: Path) -> str:
    """'keras2' (reloadable as tf_keras), 'keras3-export' (Keras 3 model.export) or 'tf-saved-model'."""
    path = Path(path)
    validate_saved_model_dir(path)
    if (path / "keras_metadata.pb").is_file():
        return "keras2"
    mg = read_meta_graph(path)
    nodes = mg.object_graph_def.nodes
    root_children = {c.local_name for c in nodes[0].children} if nodes else set()
    if {"_all_variables", "_misc_assets"} & root_children:
        return "keras3-export"
    return "tf-saved-model"


def load_serving_fn(path: Path, key: str = SERVING, trust_model_code: bool = False):
    """Load the SavedModel and return (loaded object, concrete function for ``key``, SignatureInfo); its graph is
    scanned first (``trust.guard``: side-effect ops refused unless ``trust_model_code``)."""
    require_no_side_effects(path, trust_model_code, "Loading and running its serving signature", key)
    info = saved_model_signature(path, key)

    tf = import_tf()
    loaded = tf.saved_model.load(str(path))
    return loaded, loaded.signatures[key], info


def _tflite_tensor(detail: dict, name: str) -> TensorSpec:
    shape = tuple(None if s < 0 else int(s) for s in detail.get("shape_signature", detail["shape"]))
    return TensorSpec(name, detail["dtype"].__name__, shape)


def saved_model_signatures(path: Path) -> tuple[SignatureInfo, ...]:
    """Every callable signature of the SavedModel at ``path``, sorted by key (init ops excluded)."""
    mg = read_meta_graph(path)
    keys = sorted(k for k in mg.signature_def if not k.startswith("__"))
    sigs = mg.signature_def
    return tuple(SignatureInfo(k, _tensor_infos(sigs[k].inputs), _tensor_infos(sigs[k].outputs)) for k in keys)


def tflite_signatures(path: Path) -> tuple[SignatureInfo, ...]:
    """Every signature of a .tflite file, sorted by key (empty when it has none), read by LiteRT's runners."""
    interp = load_interpreter(Path(path), allocate=False)
    out = []
    for key in sorted(interp.get_signature_list()):
        runner = interp.get_signature_runner(key)
        ins, outs = runner.get_input_details(), runner.get_output_details()
        out.append(
            SignatureInfo(
                key,
                tuple(_tflite_tensor(ins[n], n) for n in sorted(ins)),
                tuple(_tflite_tensor(outs[n], n) for n in sorted(outs)),
            )
        )
    return tuple(out)


def tflite_signature(path: Path) -> SignatureInfo:
    """SignatureInfo of a .tflite file (its first signature, or raw input/output details if it has none)."""
    interp = load_interpreter(Path(path), allocate=False)  # details need no arena (nor its memory)
    sigs = interp.get_signature_list()
    if sigs:
        key = SERVING if SERVING in sigs else sorted(sigs)[0]
        runner = interp.get_signature_runner(key)
        ins = runner.get_input_details()
        outs = runner.get_output_details()
        return SignatureInfo(
            key,
            tuple(_tflite_tensor(ins[n], n) for n in sorted(ins)),
            tuple(_tflite_tensor(outs[n], n) for n in sorted(outs)),
        )
    ins = interp.get_input_details()
    outs = interp.get_output_details()
    return SignatureInfo(
        "", tuple(_tflite_tensor(d, d["name"]) for d in ins), tuple(_tflite_tensor(d, d["name"]) for d in outs)
    )


def flatbuffer_signature(data: bytes) -> SignatureInfo:
    """SignatureInfo read from a .tflite's flatbuffer alone (its first signature, else subgraph 0's tensors), for a
    model no interpreter here can open (Flex ops: LiteRT has no Flex delegate)."""
    _, model, type_names, _ = _unpack(data)
    sg = model.subgraphs[0]

    def spec(index: int, name=None) -> TensorSpec:
        t = sg.tensors[index]
        dims = t.shapeSignature if t.shapeSignature is not None else t.shape
        shape = tuple(None if d < 0 else int(d) for d in (dims if dims is not None else ()))
        return TensorSpec(name or t.name.decode("utf-8", "replace"), type_names[t.type].lower(), shape)

    if model.signatureDefs:
        sig = model.signatureDefs[0]
        return SignatureInfo(
            sig.signatureKey.decode("utf-8", "replace"),
            tuple(spec(m.tensorIndex, m.name.decode("utf-8", "replace")) for m in sig.inputs),
            tuple(spec(m.tensorIndex, m.name.decode("utf-8", "replace")) for m in sig.outputs),
        )
    return SignatureInfo("", tuple(map(spec, sg.inputs)), tuple(map(spec, sg.outputs)))


def session_signature(
    tf, saved_model: Path, key: str, threads: int | None = None, trust_model_code: bool = False
) -> Callable[[dict], dict]:
    """``feed dict -> {output name: array}`` running signature ``key`` of ``saved_model`` in a TF1 session with
    ``threads`` intra- and inter-op threads (None: TensorFlow's default); side-effect ops refused unless
    ``trust_model_code``."""
    require_no_side_effects(
        saved_model, trust_model_code, "Running the SavedModel (its restore, init and signature ops)", key
    )
    config = None
    if threads is not None:
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
    graph = tf.Graph()
    with graph.as_default():
        session = tf.compat.v1.Session(graph=graph, config=config)
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(saved_model))
    sig = meta.signature_def[key]
    outputs = {name: info.name for name, info in sig.outputs.items()}

    def run(feed: dict) -> dict:
        return session.run(outputs, {sig.inputs[name].name: value for name, value in feed.items()})

    return run


def signature_runner(
    tf, saved_model: Path, key: str, threads: int | None = None, trust_model_code: bool = False
) -> tuple[Callable[[dict], dict], int | None]:
    """(runner, the thread count it runs on): ``session_signature``'s TF1 session (loads faster than
    ``tf.saved_model.load``, which revives every Keras layer), or, for a SavedModel the TF1 loader refuses, the
    TF2 signature function on TensorFlow's process-wide thread pools (thread count None). Side-effect ops are
    refused unless ``trust_model_code`` (``trust.guard``)."""
    require_no_side_effects(
        saved_model, trust_model_code, "Running the SavedModel (its restore, init and signature ops)", key
    )
    try:
        return session_signature(tf, saved_model, key, threads, trust_model_code), threads
    except (ValueError, TypeError, KeyError, RuntimeError, tf.errors.OpError):
        loaded = tf.saved_model.load(str(saved_model))
        fn = loaded.signatures[key]

        def run(feed: dict) -> dict:
            _ = loaded  # the signature holds its variables weakly: keep the loaded object alive with the runner
            return {k: v.numpy() for k, v in fn(**{n: tf.constant(a) for n, a in feed.items()}).items()}

        return run, None
