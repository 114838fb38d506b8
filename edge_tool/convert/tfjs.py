"""TensorFlow.js graph-model export through the tensorflowjs Python API."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from edge_tool.errors import ConversionError, ModelError, UsageError

TFJS_WEIGHT_QUANT = ("none", "float16", "uint8", "uint16")
SHARD_BYTES = 4 * 1024 * 1024  # tfjs default; browsers fetch the shards in parallel


def export_tfjs(saved_model: Path, out_dir: Path, weight_quant: str | None = None,
                signature: str = "serving_default", user_metadata: dict | None = None) -> Path:
    """Convert a SavedModel to a tfjs graph model (model.json + shards) in ``out_dir``; return model.json's path.

    ``user_metadata`` (labels, input normalization) lands in model.json's ``userDefinedMetadata``, which tfjs
    exposes as ``GraphModel.metadata``.
    """
    quant = weight_quant or "none"
    if quant not in TFJS_WEIGHT_QUANT:
        raise UsageError(f"--tfjs-quant must be one of {', '.join(TFJS_WEIGHT_QUANT)}, got {quant!r}.")
    from edge_tool.env import configure_tf_env  # noqa: PLC0415

    configure_tf_env()
    from tensorflowjs.converters import tf_saved_model_conversion_v2 as tfjs_conv  # noqa: PLC0415

    log = io.StringIO()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    qmap = None if quant == "none" else {quant: "*"}
    try:
        with contextlib.redirect_stdout(log):
            tfjs_conv.convert_tf_saved_model(
                str(saved_model), str(out_dir), signature_def=signature, saved_model_tags="serve",
                quantization_dtype_map=qmap, weight_shard_size_bytes=SHARD_BYTES, metadata=user_metadata or None,
            )
    except (ValueError, KeyError, RuntimeError) as exc:
        raise ConversionError(f"tensorflowjs could not convert {saved_model}: {exc}\n{log.getvalue()[-2000:]}") from None
    model_json = out_dir / "model.json"
    fmt = json.loads(model_json.read_text()).get("format")
    if fmt != "graph-model":
        raise ConversionError(f"tensorflowjs wrote a {fmt!r} model; expected a graph-model.")
    return model_json


def read_graph_model_json(model_dir: Path, user: str) -> dict:
    """Parse ``model_dir/model.json``; ModelError unless it is a tfjs graph model (``user`` names who needs one)."""
    model_json = Path(model_dir) / "model.json"
    try:
        doc = json.loads(model_json.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"{model_json} is not readable JSON: {exc}") from None
    if doc.get("format") != "graph-model":
        raise ModelError(
            f"{model_json} is a {doc.get('format')!r} TFJS model; {user} runs graph models "
            "(edgetool convert MODEL --format tfjs, or tensorflowjs_converter --input_format tf_saved_model)."
        )
    return doc
