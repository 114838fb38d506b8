"""What the demo page needs to know about a model: where it is, its signature, and the input UI that fits it."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError

MAX_FLAT_FEATURES = 4096
IMAGE_CHANNELS = (1, 3)
# TF dtype enum names in model.json -> (numpy name, dtype the tfjs tensor must have)
TF_DTYPES = {
    "DT_FLOAT": ("float32", "float32"), "DT_HALF": ("float16", "float32"), "DT_DOUBLE": ("float64", "float32"),
    "DT_INT32": ("int32", "int32"), "DT_INT64": ("int64", "int32"), "DT_INT16": ("int16", "int32"),
    "DT_INT8": ("int8", "int32"), "DT_UINT8": ("uint8", "int32"), "DT_UINT16": ("uint16", "int32"),
}
NUMPY_TO_TFJS = {numpy: tfjs for numpy, tfjs in TF_DTYPES.values()}


class ModelKind(str, enum.Enum):
    """Formats ``edgetool demo`` accepts."""

    TFJS = "tfjs-graph-model"
    SAVED_MODEL = "saved-model"


@dataclass(frozen=True)
class Tensor:
    """One signature entry: user-facing key, graph tensor name ('pixels:0'), numpy dtype, shape (None = any)."""

    key: str
    tensor: str
    dtype: str
    shape: tuple

    @property
    def tfjs_dtype(self) -> str:
        """Dtype of the tf.Tensor the page must feed (tfjs has float32/int32 only)."""
        if self.dtype not in NUMPY_TO_TFJS:
            raise ModelError(f"Input {self.key!r} has dtype {self.dtype}; the demo supports numeric inputs only.")
        return NUMPY_TO_TFJS[self.dtype]


def detect_model(path: Path) -> ModelKind:
    """TFJS graph-model dir (model.json) or SavedModel dir (saved_model.pb); ModelError otherwise."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Expected a TFJS graph-model or SavedModel directory at {path}, but nothing is there.")
    if path.is_file() and path.name == "model.json":
        raise ModelError(f"Pass the directory holding model.json ({path.parent}), not the file itself.")
    if not path.is_dir():
        raise ModelError(f"Expected a model directory, but {path} is a file (.tflite and .keras are not demo inputs).")
    if (path / "model.json").is_file():
        return ModelKind.TFJS
    if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
        return ModelKind.SAVED_MODEL
    found = sorted(p.name for p in path.iterdir())[:8]
    raise ModelError(
        f"Expected a TFJS graph-model dir (model.json) or a SavedModel dir (saved_model.pb) at {path}, "
        f"but it holds {found or 'nothing'}."
    )


def _dims(shape_proto: dict) -> tuple:
    if shape_proto.get("unknownRank"):
        return ()
    return tuple(None if int(d.get("size", -1)) < 0 else int(d["size"]) for d in shape_proto.get("dim", []))


def _tensors(entries: dict) -> tuple[Tensor, ...]:
    out = []
    for key in sorted(entries):
        e = entries[key]
        numpy_dtype = TF_DTYPES.get(e.get("dtype", ""), (e.get("dtype", "?"), None))[0]
        out.append(Tensor(key, e.get("name", key), numpy_dtype, _dims(e.get("tensorShape", {}))))
    return tuple(out)


def _entries(mapping) -> list:
    return list(mapping.values()) if isinstance(mapping, dict) else [None]


def read_tfjs_model(model_dir: Path) -> tuple[dict, tuple[Tensor, ...], tuple[Tensor, ...]]:
    """Parse model.json: (json, inputs, outputs); ModelError when it is not a complete graph model."""
    from edge_tool.convert.tfjs import read_graph_model_json  # noqa: PLC0415

    model_json = Path(model_dir) / "model.json"
    meta = read_graph_model_json(model_dir, "the demo (or pass the SavedModel directory)")
    signature = meta.get("signature") or {}
    if not isinstance(signature, dict) or not signature.get("inputs") or not signature.get("outputs"):
        raise ModelError(f"{model_json} has no signature (inputs/outputs); convert it from a SavedModel with edgetool.")
    entries = [*_entries(signature["inputs"]), *_entries(signature["outputs"])]
    if not all(isinstance(e, dict) for e in entries):
        raise ModelError(f"{model_json} has a malformed signature (inputs/outputs must map names to tensor objects).")
    return meta, _tensors(signature["inputs"]), _tensors(signature["outputs"])


def weight_files(model_dir: Path, meta: dict) -> list[str]:
    """Shard paths listed in a model.json, each checked to be a file inside ``model_dir``."""
    from edge_tool.convert.tfjs import weight_paths  # noqa: PLC0415

    return weight_paths(Path(model_dir), meta)


def input_ui(inputs: tuple[Tensor, ...]) -> dict:
    """UI description of the single model input: kind 'image' (rank 3/4, H,W[,C in 1/3]) or 'flat' ([N,F])."""
    if len(inputs) != 1:
        names = ", ".join(t.key for t in inputs)
        raise ModelError(f"The demo page drives models with exactly one input; this one has {len(inputs)} ({names}).")
    t = inputs[0]
    base = {"name": t.key, "tensor": t.tensor, "dtype": t.dtype, "tfjsDtype": t.tfjs_dtype, "shape": list(t.shape)}
    shape = t.shape
    if len(shape) == 4 and shape[3] in IMAGE_CHANNELS or len(shape) == 3:
        height, width = shape[1], shape[2]
        channels = shape[3] if len(shape) == 4 else 1
        if height is None or width is None:
            raise ModelError(f"Input {t.key!r} has shape {_fmt(shape)}; image inputs need a fixed height and width.")
        return {**base, "kind": "image", "height": height, "width": width, "channels": channels, "range": [0, 255]}
    if len(shape) == 2 and shape[1] is not None and shape[1] <= MAX_FLAT_FEATURES:
        return {**base, "kind": "flat", "features": shape[1], "featureNames": []}
    raise ModelError(
        f"Input {t.key!r} has shape {_fmt(shape)}; the demo supports images [N,H,W,1|3] / [N,H,W] "
        f"and flat vectors [N,F] with F <= {MAX_FLAT_FEATURES}."
    )


def output_ui(outputs: tuple[Tensor, ...]) -> dict:
    """The output the page ranks: the first rank-2 [N,K] output (class scores or probabilities)."""
    for t in outputs:
        if len(t.shape) == 2:
            return {"name": t.key, "tensor": t.tensor, "shape": list(t.shape), "classes": t.shape[1]}
    found = ", ".join(f"{t.key}{_fmt(t.shape)}" for t in outputs)
    raise ModelError(f"The demo ranks class scores of shape [N,K]; this model outputs {found}.")


def read_labels(path: Path, classes: int | None) -> list[str]:
    """Labels, one per line; UsageError when the file is missing or the count disagrees with the output size."""
    from edge_tool.metadata.labels import read_labels_file  # noqa: PLC0415  (size and UTF-8 checks)

    return read_labels_file(Path(path), classes)


def _fmt(shape: tuple) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
