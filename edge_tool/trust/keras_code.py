"""Find Python code in a Keras model's config without Keras: the JSON is read straight from the file.

Where the config lives: an ``.h5``/``.hdf5`` file's ``model_config`` attribute (h5py), a ``.keras`` zip's
``config.json``, a tf_keras SavedModel's ``keras_metadata.pb`` (one JSON per saved layer; the protobuf is decoded
here by hand, so neither tf_keras nor TensorFlow is imported). What counts as code (``CodeFinding.kind``):

- a ``Lambda`` layer (marshalled bytecode, or a named Python function it would look up and call);
- marshalled bytecode anywhere else (Keras 3 ``__lambda__`` objects, ``function_type``/``output_shape_type``
  ``"lambda"``);
- a class or function whose ``module`` lies outside Keras (``keras``, ``tf_keras``, ``keras_nlp``, ``keras_hub``,
  ``keras_cv``), or a ``registered_name`` ``package>Name`` from another package: Keras would import that module;
- ``TFOpLambda``/``SlicingOpLambda`` calling a TensorFlow API with effects outside tensors (``tf.io.*``,
  ``tf.py_function``, ``tf.print``…) and ``ClassMethod`` layers on classes other than the tensor types.

Legacy configs (``.h5``, ``keras_metadata.pb``) name custom layers by class only; tf_keras cannot resolve such a
name without ``custom_objects`` (edgetool passes none), so loading fails instead of running anything.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.serial import Record
from edge_tool.errors import ModelError
from edge_tool.parsers.declared_sizes import check_h5_datasets
from edge_tool.parsers.keras_archive import check_keras_archive
from edge_tool.trust.side_effects import SIDE_EFFECT_OPS

KERAS_MODULES = ("keras", "tf_keras", "keras_nlp", "keras_hub", "keras_cv")
_TF_API_WITH_EFFECTS = (
    "io.",
    "compat.v1.io.",
    "compat.v1.gfile",
    "py_function",
    "numpy_function",
    "compat.v1.py_func",
    "debugging.experimental.",
    "summary.",
    "compat.v1.summary.",
    "data.",
    "saved_model.",
    "compat.v1.saved_model.",
    "train.",
    "compat.v1.train.",
    "load_op_library",
    "load_library",
)
_TENSOR_CLASSES = ("RaggedTensor", "SparseTensor", "sparse.SparseTensor", "Tensor", "TensorShape")
NAME_ONLY = "stored by name only"  # a CodeFinding.kind no loader can rebuild


@dataclass(frozen=True)
class CodeFinding(Record):
    """Python code found in a Keras config: the layer (or object) name, what it is, and the file it is in."""

    layer: str
    kind: str
    where: str

    def describe(self) -> str:
        """``layer 'scale' (Lambda layer with marshalled Python bytecode)``."""
        return f"layer {self.layer!r} ({self.kind})"


def _in_keras(module: str) -> bool:
    return module.split(".", 1)[0] in KERAS_MODULES


def _importable(module) -> bool:
    """True when ``module``'s top-level package can be found here (found, not imported: nothing runs)."""
    if not isinstance(module, str) or not module or module.split(".", 1)[0] == "__main__":
        return False
    try:
        return importlib.util.find_spec(module.split(".", 1)[0]) is not None
    except (ImportError, ValueError):
        return False


def _lambda_kind(cfg: dict) -> str:
    kinds = {cfg.get("function_type"), cfg.get("output_shape_type")}
    if "lambda" in kinds or isinstance(cfg.get("function"), (list, dict)):
        return "Lambda layer with marshalled Python bytecode"
    return "Lambda layer calling a named Python function"


def _finding_in(obj: dict) -> str | None:
    """What code the config object ``obj`` itself carries (None: none)."""
    cls, cfg = obj.get("class_name"), obj.get("config") if isinstance(obj.get("config"), dict) else {}
    if cls == "Lambda":
        return _lambda_kind(cfg)
    if cls == "__lambda__":
        return "marshalled Python bytecode (Keras __lambda__)"
    if "lambda" in (obj.get("function_type"), obj.get("output_shape_type")):
        return "marshalled Python bytecode"
    module, registered = obj.get("module"), obj.get("registered_name")
    custom = isinstance(registered, str) and ">" in registered and not _in_keras(registered.split(">", 1)[0])
    if custom and not _importable(module):
        return f"custom class {registered!r}, {NAME_ONLY}"
    if isinstance(module, str) and module and not _in_keras(module):
        return f"{cls or 'object'} from module {module!r} (Keras would import it)"
    if custom:
        return f"registered custom object {registered!r}"
    if cls in ("TFOpLambda", "SlicingOpLambda"):
        fn = str(cfg.get("function", ""))
        if fn.startswith(_TF_API_WITH_EFFECTS) or fn.removeprefix("raw_ops.") in SIDE_EFFECT_OPS:
            return f"TensorFlow call tf.{fn} (effects outside tensors)"
    if cls == "ClassMethod" and str(cfg.get("cls_symbol", "")) not in _TENSOR_CLASSES:
        return f"method of tf.{cfg.get('cls_symbol')} (not a tensor type)"
    return None


def _name_of(obj: dict, fallback: str) -> str:
    cfg = obj.get("config")
    name = cfg.get("name") if isinstance(cfg, dict) else None
    return str(name or obj.get("name") or fallback)


def find_code(config, where: str) -> list[CodeFinding]:
    """Every piece of code in the JSON ``config`` (nested layers too); ``where`` names the file it came from."""
    found, stack = [], [(config, "model")]
    while stack:
        obj, owner = stack.pop()
        if isinstance(obj, list):
            stack.extend((item, owner) for item in obj)
            continue
        if not isinstance(obj, dict):
            continue
        name = _name_of(obj, owner) if "class_name" in obj else owner
        kind = _finding_in(obj)
        if kind is not None:
            found.append(CodeFinding(name, kind, where))
            if obj.get("class_name") in ("Lambda", "__lambda__"):
                continue  # its function is part of this finding
        stack.extend((value, name) for value in obj.values())
    return found


def _json(raw, where: str):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"{where} holds a Keras config that is not readable JSON ({type(exc).__name__}); "
            "edgetool reads it before loading anything and refuses the model."
        ) from None


def _h5_configs(path: Path) -> list:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
            check_h5_datasets(f, path)  # declared sizes, before any loader reads a dataset
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelError(f"{path} is not a readable HDF5 (.h5) Keras file: {exc}") from None
    if raw is None:
        return []
    return [_json(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw), f"{path} (model_config)")]


def _keras_zip_configs(path: Path) -> list:
    config = check_keras_archive(path).config  # sizes, names and CRCs checked first: no zip bomb is unpacked
    return [] if config is None else [config]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes):
    """(field number, bytes) of every length-delimited field of a protobuf message; other wire types skipped."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1 or wire == 5:
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("field runs past the end")
            yield key >> 3, buf[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("field runs past the end")


def metadata_nodes(path: Path) -> list[dict[int, bytes]]:
    """The length-delimited fields (number -> bytes) of each node of ``keras_metadata.pb`` (SavedMetadata.nodes,
    field 1: node_path is 3, metadata JSON is 5); ValueError for a malformed protobuf."""
    return [dict(_fields(node)) for number, node in _fields(path.read_bytes()) if number == 1]


def keras_file_configs(path: Path) -> list:
    """The model config(s) of a .keras archive (config.json, after the archive checks) or an .h5 file
    (``model_config``); ModelError when the file cannot be read as one."""
    return _keras_zip_configs(path) if Path(path).suffix.lower() == ".keras" else _h5_configs(path)


def metadata_jsons(path: Path) -> list[str]:
    """The per-layer JSON strings of ``keras_metadata.pb`` (SavedMetadata.nodes[*].metadata, field 1 then 5)."""
    try:
        return [node[5].decode("utf-8") for node in metadata_nodes(path) if 5 in node]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"{path} is not a readable keras_metadata.pb ({exc}); edgetool reads it before loading "
            "anything and refuses the model."
        ) from None


def _metadata_configs(path: Path) -> list:
    return [_json(raw, str(path)) for raw in metadata_jsons(path)]


def scan_keras_code(path: Path) -> tuple[CodeFinding, ...]:
    """Code in the Keras config of ``path`` (.h5/.hdf5, .keras, or a SavedModel dir with keras_metadata.pb)."""
    path = Path(path)
    if path.is_dir():
        source, configs = path / "keras_metadata.pb", []
        if source.is_file():
            configs = _metadata_configs(source)
    else:
        source = path
        configs = keras_file_configs(path)
    found = [f for config in configs for f in find_code(config, source.name)]
    return tuple(dict.fromkeys(found))
