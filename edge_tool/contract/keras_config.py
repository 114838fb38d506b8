"""What a Keras model's saved config says about its input scaling, read as data (JSON), never deserialized.

Sources: a Keras-2 SavedModel's ``keras_metadata.pb`` (the root object's JSON metadata, read with a small protobuf
wire-format walk so no TensorFlow is needed), a ``.keras`` zip's ``config.json``, an ``.h5`` file's
``model_config`` attribute. From the input, the chain of layers it goes through is followed while each one is an
affine map by constants — ``Rescaling``, ``Normalization`` with its mean/variance in the config, a ``TFOpLambda``
``x / c``, ``x * c``, ``x - c``, ``x + c`` (what ``preprocess_input`` leaves in a functional model) — or a layer
that does nothing at inference (random augmentation, ``Resizing``); the first other layer ends it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.trust.keras_code import keras_file_configs, metadata_nodes

MAX_CONFIG_BYTES = 64 * 1024 * 1024
INERT = {
    "RandomFlip",
    "RandomRotation",
    "RandomZoom",
    "RandomContrast",
    "RandomTranslation",
    "RandomBrightness",
    "RandomHeight",
    "RandomWidth",
    "Dropout",
    "GaussianNoise",
    "GaussianDropout",
    "Resizing",
    "InputLayer",
    "Activation_linear",
}
CONTAINERS = {"Sequential", "Functional", "Model"}
_OPS = {
    "math.truediv": "div",
    "math.divide": "div",
    "math.multiply": "mul",
    "math.subtract": "sub",
    "math.add": "add",
    "__operators__.add": "add",
    "math.scalar_mul": "mul",
}


@dataclass(frozen=True)
class Scaling:
    """``model input layer sees x * scale + offset`` (per channel or scalar) and the layers that say so."""

    scale: tuple[float, ...]
    offset: tuple[float, ...]
    layers: tuple[str, ...]

    def mean_std(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The same map as (pixel - mean) / std."""
        n = max(len(self.scale), len(self.offset))
        sc = self.scale * n if len(self.scale) == 1 else self.scale
        off = self.offset * n if len(self.offset) == 1 else self.offset
        return tuple(-o / s for o, s in zip(off, sc)), tuple(1.0 / s for s in sc)


def saved_model_config(saved_model: Path) -> dict | None:
    """The root model's config from a Keras-2 SavedModel's keras_metadata.pb (None when absent or unreadable)."""
    path = Path(saved_model) / "keras_metadata.pb"
    if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
        return None
    try:
        for node in metadata_nodes(path):
            if node.get(3) == b"root" and 5 in node:
                meta = json.loads(node[5].decode("utf-8"))
                return meta if isinstance(meta, dict) else None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return None


def keras_file_config(model: Path) -> dict | None:
    """The model config of a .keras zip (config.json) or an .h5 file (``model_config`` attribute), else None."""
    try:
        configs = keras_file_configs(Path(model))
    except ModelError:
        return None
    return configs[0] if configs and isinstance(configs[0], dict) else None


def _layers(doc: dict) -> list[dict]:
    cfg = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    layers = cfg.get("layers")
    return [x for x in layers if isinstance(x, dict)] if isinstance(layers, list) else []


def _name(layer: dict) -> str:
    cfg = layer.get("config") if isinstance(layer.get("config"), dict) else {}
    return str(layer.get("name") or cfg.get("name") or "?")


def _inbound(layer: dict) -> tuple[list[str], dict]:
    """Names of the layers feeding ``layer`` (Keras-2 and Keras-3 config formats) and the call's kwargs."""
    names: list[str] = []
    kwargs: dict = {}

    def walk(x) -> None:
        if isinstance(x, dict):
            hist = x.get("keras_history")
            if hist is None and isinstance(x.get("config"), dict):
                hist = x["config"].get("keras_history")
            if isinstance(hist, list) and hist and isinstance(hist[0], str):
                names.append(hist[0])
                return
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            if len(x) >= 3 and isinstance(x[0], str) and isinstance(x[1], int) and isinstance(x[2], int):
                names.append(x[0])
                if len(x) > 3 and isinstance(x[3], dict):
                    kwargs.update(x[3])
                return
            for v in x:
                walk(v)

    nodes = layer.get("inbound_nodes")
    walk(nodes)
    if isinstance(nodes, list):
        for node in nodes:
            if isinstance(node, dict) and isinstance(node.get("kwargs"), dict):
                kwargs.update(node["kwargs"])
    return names, kwargs


def _numbers(value) -> tuple[float, ...] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return (float(value),)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in _flat(value))
    ):
        return tuple(float(v) for v in _flat(value))
    return None


def _flat(x) -> list:
    return [y for v in x for y in (_flat(v) if isinstance(v, list) else [v])]


def _affine(layer: dict, kwargs: dict) -> tuple[tuple[float, ...], tuple[float, ...]] | None | str:
    """(scale, offset) of an affine layer, "inert" for a no-op at inference, None for anything else."""
    cls = str(layer.get("class_name", ""))
    cfg = layer.get("config") if isinstance(layer.get("config"), dict) else {}
    if cls in INERT or (cls == "Activation" and cfg.get("activation") == "linear"):
        return "inert"
    if cls == "Rescaling":
        scale, offset = _numbers(cfg.get("scale")), _numbers(cfg.get("offset", 0.0))
        return (scale, offset) if scale and offset and all(s != 0 for s in scale) else None
    if cls == "Normalization" and not cfg.get("invert"):
        mean, var = _numbers(cfg.get("mean")), _numbers(cfg.get("variance"))
        if not mean or not var or any(v <= 0 for v in var):
            return None
        std = tuple(math.sqrt(v) for v in var)
        return tuple(1 / s for s in std), tuple(-m / s for m, s in zip(mean, std)) if len(mean) == len(std) else None
    op = _OPS.get(str(cfg.get("function", ""))) if cls in ("TFOpLambda", "SlicingOpLambda") else None
    const = _numbers(kwargs.get("y", kwargs.get("scalar")))
    if op is None or const is None or (op == "div" and any(c == 0 for c in const)):
        return None
    zero = tuple(0.0 for _ in const)
    return {
        "div": (tuple(1 / c for c in const), zero),
        "mul": (const, zero),
        "sub": ((1.0,), tuple(-c for c in const)),
        "add": ((1.0,), const),
    }[op]


def _compose(first: tuple, then: tuple) -> tuple:
    """then ∘ first for maps x*s+o (broadcast per channel)."""
    (s1, o1), (s2, o2) = first, then
    n = max(len(s1), len(o1), len(s2), len(o2))

    def b(v):
        return v * n if len(v) == 1 else v

    if any(len(v) not in (1, n) for v in (s1, o1, s2, o2)):
        raise ValueError("channel counts differ")
    s1, o1, s2, o2 = b(s1), b(o1), b(s2), b(o2)
    return tuple(a * c for a, c in zip(s1, s2)), tuple(o * c + d for o, c, d in zip(o1, s2, o2))


def _chain(layers: list[dict], start: str | None) -> list[tuple[dict, dict]]:
    """The layers after ``start`` (an input layer's name; None: a Sequential's order) while the path is single."""
    if start is None:
        return [(x, {}) for x in layers if x.get("class_name") != "InputLayer"]
    out, current, seen = [], start, set()
    while current not in seen:
        seen.add(current)
        consumers = [(x, kw) for x in layers for names, kw in [_inbound(x)] if current in names]
        if len(consumers) != 1 or len(_inbound(consumers[0][0])[0]) != 1:
            break
        out.append(consumers[0])
        current = _name(consumers[0][0])
    return out


def input_scaling(doc: dict, depth: int = 0) -> Scaling | None:
    """The affine map the model applies to its (single) input before anything else, or None when its config
    does not say (no such layer, a layer whose constants are not in the config, several inputs, a subclass)."""
    if depth > 8 or str(doc.get("class_name", "")) not in CONTAINERS:
        return None
    layers = _layers(doc)
    inputs = [_name(x) for x in layers if x.get("class_name") == "InputLayer"]
    sequential = doc.get("class_name") == "Sequential"
    if not sequential and len(inputs) != 1:
        return None
    total, names = ((1.0,), (0.0,)), []
    for layer, kwargs in _chain(layers, None if sequential else inputs[0]):
        step = _affine(layer, kwargs)
        if step is None and str(layer.get("class_name")) in CONTAINERS:
            inner = input_scaling(layer, depth + 1)
            step = (inner.scale, inner.offset) if inner else None
        if step is None:
            break
        if step != "inert":
            try:
                total = _compose(total, step)
            except ValueError:
                return None
            names.append(f"{layer.get('class_name')} {_name(layer)!r}")
    return Scaling(*total, tuple(names)) if names else None
