"""Read what a model takes and gives without running it: SavedModel dirs, Keras files, .tflite files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError

SERVING = "serving_default"


@dataclass(frozen=True)
class TensorInfo:
    """One input or output: signature name, numpy dtype name, shape with None for unknown dims."""

    name: str
    dtype: str
    shape: tuple

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class SignatureInfo:
    """A callable signature of a model."""

    key: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return {"key": self.key, "inputs": [t.to_dict() for t in self.inputs],
                "outputs": [t.to_dict() for t in self.outputs]}


def validate_saved_model_dir(path: Path) -> None:
    """Raise ModelError unless ``path`` is a directory holding saved_model.pb(txt)."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Expected a SavedModel directory at {path}, but nothing is there.")
    if not path.is_dir():
        raise ModelError(f"Expected a SavedModel directory, but {path} is a file.")
    if not ((path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()):
        found = sorted(p.name for p in path.iterdir())[:8]
        raise ModelError(
            f"Expected a SavedModel directory (containing saved_model.pb), but {path} holds {found or 'nothing'}."
        )


def _read_saved_model_proto(path: Path):
    validate_saved_model_dir(path)
    from edge_tool.env import import_tf  # noqa: PLC0415

    import_tf()
    from tensorflow.core.protobuf import saved_model_pb2  # noqa: PLC0415

    sm = saved_model_pb2.SavedModel()
    pb = Path(path) / "saved_model.pb"
    try:
        if pb.is_file():
            sm.ParseFromString(pb.read_bytes())
        else:
            from google.protobuf import text_format  # noqa: PLC0415

            text_format.Parse((Path(path) / "saved_model.pbtxt").read_text(), sm)
    except Exception as exc:  # protobuf raises DecodeError and friends
        raise ModelError(f"{path}/saved_model.pb is not a readable SavedModel protobuf: {exc}") from None
    if not sm.meta_graphs:
        raise ModelError(f"{path} holds a SavedModel with no MetaGraph.")
    return sm.meta_graphs[0]


def _tensor_infos(tensor_map) -> tuple[TensorInfo, ...]:
    from tensorflow.python.framework import dtypes  # noqa: PLC0415

    infos = []
    for name in sorted(tensor_map):
        t = tensor_map[name]
        shape = None if t.tensor_shape.unknown_rank else tuple(
            None if d.size < 0 else int(d.size) for d in t.tensor_shape.dim
        )
        infos.append(TensorInfo(name, dtypes.as_dtype(t.dtype).as_numpy_dtype.__name__, shape))
    return tuple(infos)


def signature_keys(path: Path) -> list[str]:
    """Callable signature keys of a SavedModel (init ops excluded)."""
    mg = _read_saved_model_proto(path)
    return sorted(k for k in mg.signature_def if not k.startswith("__"))


def saved_model_signature(path: Path, key: str = SERVING) -> SignatureInfo:
    """SignatureInfo of ``key`` read from saved_model.pb; ModelError when the signature is missing."""
    mg = _read_saved_model_proto(path)
    if key not in mg.signature_def:
        found = sorted(k for k in mg.signature_def if not k.startswith("__"))
        raise ModelError(
            f"Expected a {key!r} signature in the SavedModel at {path}, but it has "
            f"{found or 'no signatures'}. Re-export it with a serving signature "
            f"(tf.saved_model.save(..., signatures=...), Keras model.save(), or Keras 3 model.export())."
        )
    sig = mg.signature_def[key]
    return SignatureInfo(key, _tensor_infos(sig.inputs), _tensor_infos(sig.outputs))


def saved_model_flavor(path: Path) -> str:
    """'keras2' (reloadable as tf_keras), 'keras3-export' (Keras 3 model.export) or 'tf-saved-model'."""
    path = Path(path)
    validate_saved_model_dir(path)
    if (path / "keras_metadata.pb").is_file():
        return "keras2"
    mg = _read_saved_model_proto(path)
    nodes = mg.object_graph_def.nodes
    root_children = {c.local_name for c in nodes[0].children} if nodes else set()
    if {"_all_variables", "_misc_assets"} & root_children:
        return "keras3-export"
    return "tf-saved-model"


def load_serving_fn(path: Path, key: str = SERVING):
    """Load the SavedModel and return (loaded object, concrete function for ``key``, SignatureInfo)."""
    info = saved_model_signature(path, key)
    from edge_tool.env import import_tf  # noqa: PLC0415

    tf = import_tf()
    loaded = tf.saved_model.load(str(path))
    return loaded, loaded.signatures[key], info


def _tflite_tensor(detail: dict, name: str) -> TensorInfo:
    shape = tuple(None if s < 0 else int(s) for s in detail.get("shape_signature", detail["shape"]))
    return TensorInfo(name, detail["dtype"].__name__, shape)


def tflite_signature(path: Path) -> SignatureInfo:
    """SignatureInfo of a .tflite file (its first signature, or raw input/output details if it has none)."""
    from edge_tool.runtime import load_interpreter  # noqa: PLC0415

    interp = load_interpreter(Path(path))
    sigs = interp.get_signature_list()
    if sigs:
        key = SERVING if SERVING in sigs else sorted(sigs)[0]
        runner = interp.get_signature_runner(key)
        ins = runner.get_input_details()
        outs = runner.get_output_details()
        return SignatureInfo(key, tuple(_tflite_tensor(ins[n], n) for n in sorted(ins)),
                             tuple(_tflite_tensor(outs[n], n) for n in sorted(outs)))
    ins = interp.get_input_details()
    outs = interp.get_output_details()
    return SignatureInfo("", tuple(_tflite_tensor(d, d["name"]) for d in ins),
                         tuple(_tflite_tensor(d, d["name"]) for d in outs))
