"""The demo's input contract and labels: resolved the way convert resolves them, written into demo-config.json.

Each image input's entry gets ``mean``/``std`` (per channel, 0..255 units: the page feeds (p - mean[c]) / std[c]),
``channelOrder`` and ``resize``, and ``range`` (the values a 0..255 pixel can become, for older pages).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.contract import for_input
from edge_tool.calibration.readers.images import ImageFolderReader
from edge_tool.calibration.spec import TensorSpec
from edge_tool.calibration.types import LoadOptions
from edge_tool.contract.declared import image_contract
from edge_tool.contract.resolve import ProbeSetup, Resolution, resolve
from edge_tool.core.env import import_tf
from edge_tool.demo.tflite_model import is_tflite_model, tflite_normalization
from edge_tool.models.labelmap import folder_index_map
from edge_tool.models.signatures import SERVING, signature_runner


@dataclass(frozen=True)
class _Signature:
    inputs: tuple
    outputs: tuple


def _tfjs_metadata(model_dir: Path, signature) -> tuple | None:
    """(mean, std, origin) from model.json's userDefinedMetadata (edgetool's input_contract, else a non-identity
    input_normalization), or None."""
    try:
        doc = json.loads((Path(model_dir) / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    meta = doc.get("userDefinedMetadata") if isinstance(doc, dict) else None
    if not isinstance(meta, dict):
        return None
    records = meta.get("input_contract")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        rec = records[0]
        return rec.get("mean"), rec.get("std"), f"{model_dir}/model.json (input_contract)"
    norm = meta.get("input_normalization")
    if isinstance(norm, dict) and isinstance(norm.get("mean"), list) and isinstance(norm.get("std"), list):
        identity = all(m == 0 for m in norm["mean"]) and all(s == 1 for s in norm["std"])
        if not identity:
            return norm["mean"], norm["std"], f"{model_dir}/model.json (input_normalization)"
    return None


def _numbers(values) -> bool:
    return isinstance(values, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def folder_classes(data: Path | None, inputs) -> tuple[str, ...] | None:
    """Class names of a labelled image folder (``image_dataset_from_directory`` order), read without decoding."""
    if data is None or not Path(data).is_dir() or len(inputs) != 1:
        return None

    t = inputs[0]
    reader = ImageFolderReader(Path(data), [TensorSpec(t.key, t.dtype, tuple(t.shape))], LoadOptions())
    return None if reader.problems else reader.class_names


def resolve_demo_contract(
    cfg, kind_is_saved_model: bool, inputs, outputs, classes: int | None, labels: list[str] | None
) -> Resolution:
    """The input contract of the demo's model: --input-*, the model, model.json metadata, else measured on a
    labelled --calibration folder (SavedModel only), else raw 0..255 (said in one line)."""
    sig = _Signature(
        tuple(TensorSpec(t.key, t.dtype, tuple(t.shape)) for t in inputs),
        tuple(TensorSpec(t.key, t.dtype, tuple(t.shape)) for t in outputs),
    )
    if kind_is_saved_model:
        metadata = None
    elif is_tflite_model(Path(cfg.model)):
        metadata = tflite_normalization(Path(cfg.model))
    else:
        metadata = _tfjs_metadata(Path(cfg.model), sig)
    if metadata is not None and not (_numbers(metadata[0]) and _numbers(metadata[1])):
        metadata = None
    probe = None
    data = Path(cfg.calibration) if cfg.calibration is not None else None
    if kind_is_saved_model and data is not None and data.is_dir() and classes:
        probe = ProbeSetup(
            data,
            lambda: signature_runner(import_tf(), Path(cfg.model), SERVING)[0],
            classes,
            lambda names: folder_index_map(names, labels, classes, data, "the labels")[0],
        )
    saved = Path(cfg.model) if kind_is_saved_model else None
    return resolve(sig, Path(cfg.model), saved, cfg.contract, data, probe, metadata)


def page_entry(entry: dict, resolution: Resolution) -> dict:
    """An image input's demo-config entry with its contract's mean/std/channelOrder/resize and the derived range."""
    if entry.get("kind") != "image":
        return entry
    contract = for_input(resolution.contracts, entry["name"])
    if contract is None:
        base = image_contract(TensorSpec(entry["name"], entry["dtype"], tuple(entry["shape"])))
        contract = base if base is not None else None
    if contract is None:
        return {
            **entry,
            "mean": [0.0] * entry["channels"],
            "std": [1.0] * entry["channels"],
            "channelOrder": "L" if entry["channels"] == 1 else "RGB",
            "resize": "bilinear",
        }
    lo, hi = contract.value_range
    return {
        **entry,
        "range": [lo, hi],
        "mean": list(contract.mean),
        "std": list(contract.std),
        "channelOrder": contract.channel_order,
        "resize": contract.resize,
    }
