"""What the demo page needs to know about a model: where it is, its signature, and the input UI that fits it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError, UsageError
from edge_tool.metadata.labels import read_labels_file
from edge_tool.parsers.tfjs_manifest import read_graph_model_json, weight_paths
from edge_tool.tasks.detection import is_box_output

MAX_FLAT_FEATURES = 4096
IMAGE_CHANNELS = (1, 3)
# TF dtype enum names in model.json -> (numpy name, dtype the tfjs tensor must have)
TF_DTYPES = {
    "DT_FLOAT": ("float32", "float32"),
    "DT_HALF": ("float16", "float32"),
    "DT_DOUBLE": ("float64", "float32"),
    "DT_INT32": ("int32", "int32"),
    "DT_INT64": ("int64", "int32"),
    "DT_INT16": ("int16", "int32"),
    "DT_INT8": ("int8", "int32"),
    "DT_UINT8": ("uint8", "int32"),
    "DT_UINT16": ("uint16", "int32"),
    "DT_STRING": ("string", None),
    "DT_BOOL": ("bool", None),
}
NUMPY_TO_TFJS = {numpy: tfjs for numpy, tfjs in TF_DTYPES.values() if tfjs is not None}


class ModelKind(str, enum.Enum):
    """Formats ``edgetool demo`` accepts."""

    TFJS = "tfjs-graph-model"
    SAVED_MODEL = "saved-model"
    TFLITE = "tflite"  # a .tflite file: a LiteRT.js-only site (demo.tflite_model) or the LM page (demo.lm_site)


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
    """TFJS graph-model dir (model.json), SavedModel dir (saved_model.pb) or .tflite file; ModelError otherwise."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Expected a TFJS graph-model or SavedModel directory at {path}, but nothing is there.")
    if path.is_file() and path.name == "model.json":
        raise ModelError(f"Pass the directory holding model.json ({path.parent}), not the file itself.")
    if path.is_file() and path.suffix.lower() == ".tflite":
        return ModelKind.TFLITE
    if not path.is_dir():
        raise ModelError(
            f"Expected a model directory, but {path} is a file (demo takes a TFJS graph-model dir, a "
            "SavedModel dir, a .keras/.h5 file or a .tflite file)."
        )
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
        user_key = re.sub(r":\d+$", "", key)  # tf.Module exports key inputs by tensor name ('a:0'): show 'a'
        out.append(Tensor(user_key, e.get("name", key), numpy_dtype, _dims(e.get("tensorShape", {}))))
    return tuple(out)


def _entries(mapping) -> list:
    return list(mapping.values()) if isinstance(mapping, dict) else [None]


def read_tfjs_model(model_dir: Path) -> tuple[dict, tuple[Tensor, ...], tuple[Tensor, ...]]:
    """Parse model.json: (json, inputs, outputs); ModelError when it is not a complete graph model."""
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
    return weight_paths(Path(model_dir), meta)


DEFAULT_IMAGE_SIZE = (224, 224)  # H×W fed to images whose height/width the model leaves open (--input-size)
MAX_IMAGE_SIDE = 4096
PROB_OUTPUT_MIN_CLASSES = 2


def parse_input_size(text: str) -> tuple[int, int]:
    """'HxW' (e.g. '224x224') -> (H, W); UsageError naming the flag otherwise."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
        h, w = (int(p) for p in parts)
        if 1 <= h <= MAX_IMAGE_SIDE and 1 <= w <= MAX_IMAGE_SIDE:
            return h, w
    raise UsageError(f"--input-size must be HxW with each side 1..{MAX_IMAGE_SIDE} (e.g. 224x224), got {text!r}.")


def _is_image(t: Tensor) -> bool:
    """[N,H,W,1|3], or [N,H,W] with both sides open or both >= 8 (a [N,256,1] waveform is not a picture)."""
    shape = t.shape
    if len(shape) == 4:
        return shape[3] in IMAGE_CHANNELS
    if len(shape) != 3 or t.dtype.startswith("int"):
        return False
    return (shape[1] is None and shape[2] is None) or (None not in shape[1:] and min(shape[1:]) >= 8)


def _image_ui(t: Tensor, base: dict, size: tuple[int, int] | None) -> dict:
    shape = t.shape
    fallback = size or DEFAULT_IMAGE_SIZE
    height = shape[1] if shape[1] is not None else fallback[0]
    width = shape[2] if shape[2] is not None else fallback[1]
    channels = shape[3] if len(shape) == 4 else 1
    feed = [1, height, width, *([channels] if len(shape) == 4 else [])]
    return {
        **base,
        "kind": "image",
        "height": height,
        "width": width,
        "channels": channels,
        "range": [0, 255],
        "feedShape": feed,
        "resized": shape[1] is None or shape[2] is None,
    }


AUDIO_MIN_SAMPLES = 1024  # a float [N, samples] input this long is a waveform (a file upload), not a form
AUDIO_NAMES = re.compile(r"audio|wave|pcm|signal|sound|speech", re.I)  # ... and from 64 samples when its name says so


def _is_audio(t: Tensor) -> bool:
    """A float [N, samples] input long enough (or named) to be a waveform."""
    if len(t.shape) != 2 or t.shape[1] is None or not t.dtype.startswith("float"):
        return False
    return t.shape[1] >= AUDIO_MIN_SAMPLES or (t.shape[1] >= 64 and bool(AUDIO_NAMES.search(t.key)))


def _generic_ui(t: Tensor, base: dict) -> dict:
    """A form for a non-image input: every dimension after the batch must be fixed (product <= MAX_FLAT_FEATURES);
    a waveform [N, samples] gets kind 'audio' (a WAV upload), a video [N, T, H, W, C] kind 'video' (a note)."""
    dims = t.shape[1:]
    if any(d is None for d in dims):
        raise ModelError(
            f"Input {t.key!r} has shape {_fmt(t.shape)}; the demo needs every dimension after the batch fixed, "
            "except the height and width of image inputs [N,H,W,1|3] (set with --input-size). "
            "Re-export the model with a fixed shape for this input."
        )
    count = 1
    for d in dims:
        count *= d
    if _is_audio(t) or len(t.shape) == 5:
        return {
            **base,
            "kind": "audio" if len(t.shape) == 2 else "video",
            "features": count,
            "featureNames": [],
            "integer": False,
            "feedShape": [1, *dims],
        }
    if count > MAX_FLAT_FEATURES:
        raise ModelError(
            f"Input {t.key!r} has shape {_fmt(t.shape)} ({count} values per sample); the demo's form "
            f"takes at most {MAX_FLAT_FEATURES} values per input."
        )
    integer = t.dtype.startswith(("int", "uint"))
    kind = "flat" if len(t.shape) == 2 else "tensor"
    return {
        **base,
        "kind": kind,
        "features": count,
        "featureNames": [],
        "integer": integer,
        "feedShape": [1, *dims] if t.shape else [],
    }


def input_ui(inputs: tuple[Tensor, ...], size: tuple[int, int] | None = None) -> list[dict]:
    """UI description of every model input, in signature order.

    The first image-like input ([N,H,W,1|3] or [N,H,W]) gets kind 'image' (drawing pad, upload, camera), resized to
    ``size`` (or DEFAULT_IMAGE_SIZE) where the model leaves H/W open; every other input gets a form: kind 'flat'
    ([N,F]) or 'tensor' (higher rank, values in row-major order), integer fields for integer dtypes.
    """
    if not inputs:
        raise ModelError("The model's signature has no inputs; the demo page has nothing to feed.")
    specs, has_image = [], False
    for t in inputs:
        base = {"name": t.key, "tensor": t.tensor, "dtype": t.dtype, "tfjsDtype": t.tfjs_dtype, "shape": list(t.shape)}
        if _is_image(t) and not has_image:
            specs.append(_image_ui(t, base, size))
            has_image = True
        else:
            specs.append(_generic_ui(t, base))
    return specs


def output_ui(outputs: tuple[Tensor, ...]) -> list[dict]:
    """Every output head; kind 'classes' for [N,K] (K >= 2: ranked top-k when probability-like), else 'values'.

    The first 'classes' head (or the first head) is the primary one: labels apply to it and ``predict()`` ranks it.
    A box head (named like boxes/bbox, 4 values: eval's detection rule) is 'values', never the ranked head.
    """
    if not outputs:
        raise ModelError("The model's signature has no outputs; the demo page has nothing to show.")
    specs = []
    for t in outputs:
        classes = t.shape[1] if len(t.shape) == 2 and t.shape[1] is not None else None
        if is_box_output(t.key, t.shape):  # [N, 4] corners of a detection head are not 4 class scores
            classes = None
        kind = "classes" if classes is not None and classes >= PROB_OUTPUT_MIN_CLASSES else "values"
        specs.append(
            {
                "name": t.key,
                "tensor": t.tensor,
                "shape": list(t.shape),
                "kind": kind,
                "classes": classes if kind == "classes" else None,
            }
        )
    primary = next((s for s in specs if s["kind"] == "classes"), specs[0])
    return [primary, *(s for s in specs if s is not primary)]


def read_labels(path: Path, classes: int | None) -> list[str]:
    """Labels, one per line; UsageError when the file is missing or the count disagrees with the output size."""
    return read_labels_file(Path(path), classes)


def _fmt(shape: tuple) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
