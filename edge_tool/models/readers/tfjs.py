"""tfjs: a TensorFlow.js graph model (a model.json, or the directory holding it); its quantization read from the
weights manifest, its size the model.json plus every weight shard (each checked to be a file inside the model's
directory)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.models.readers.registry import READERS, Artifact, FormatReader
from edge_tool.parsers.tfjs_manifest import read_graph_model_json, weight_paths

MODEL_JSON = "model.json"


def locate(path: Path) -> Path | None:
    """The model.json named, or the one in the directory named."""
    if path.is_file() and path.name == MODEL_JSON:
        return path
    if path.is_dir() and (path / MODEL_JSON).is_file():
        return path / MODEL_JSON
    return None


def describe(given: Path, model_json: Path) -> Artifact:
    """Quantization from the weights' ``quantization.dtype`` (one dtype: its mode; several: "mixed")."""
    model_dir = model_json.parent
    doc = read_graph_model_json(model_dir, "eval")  # every shard path checked to be a file inside model_dir
    size = model_json.stat().st_size + sum((model_dir / p).stat().st_size for p in weight_paths(model_dir, doc))
    qtypes = set()
    for group in doc.get("weightsManifest", []):
        for w in group.get("weights", []):
            q = (w.get("quantization") or {}).get("dtype") if isinstance(w, dict) else None
            if q:
                qtypes.add(str(q))
    quant = (
        {"float16": "fp16"}.get(next(iter(qtypes)), next(iter(qtypes)))
        if len(qtypes) == 1
        else ("mixed" if qtypes else "fp32")
    )
    return Artifact(given, model_json, "tfjs", quant, "model.json weights", size)


READER = READERS.register(
    FormatReader(
        "tfjs", "a TFJS model directory", locate, describe, dir_noun="a TFJS model directory (with model.json)"
    )
)
