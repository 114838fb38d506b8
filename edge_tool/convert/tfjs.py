"""TensorFlow.js graph-model export through the tensorflowjs Python API."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
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
    if not _IN_REEXPORT and unsupported_fusions(model_json):
        _reexport_without_onednn(saved_model, out_dir, quant, signature)
    return model_json


MAX_MODEL_JSON_BYTES = 256 * 1024 * 1024  # topology JSON; the weights live in the shards
# Fusions TensorFlow's grappler remapper makes when oneDNN is on (the default on x86 Linux) that no tfjs 4.22
# backend implements: "_fusedhardswish activation not yet supported for FusedConv2D in the wasm backend", and the
# same on cpu and webgl. MobileNetV3 has eleven such convs.
UNSUPPORTED_FUSED_OPS = ("_FusedHardSwish",)
_IN_REEXPORT = os.environ.get("EDGETOOL_TFJS_REEXPORT") == "1"


def unsupported_fusions(model_json: Path) -> list[str]:
    """Names of nodes whose fused activation no tfjs backend runs."""
    nodes = json.loads(Path(model_json).read_text()).get("modelTopology", {}).get("node", [])
    found = []
    for node in nodes:
        fused = node.get("attr", {}).get("fused_ops", {}).get("list", {}).get("s", [])
        if any(base64.b64decode(op).decode(errors="replace") in UNSUPPORTED_FUSED_OPS for op in fused):
            found.append(node.get("name", "?"))
    return found


def _reexport_without_onednn(saved_model: Path, out_dir: Path, quant: str, signature: str) -> None:
    """Convert again in a fresh process with TF_ENABLE_ONEDNN_OPTS=0, so grappler leaves hard-swish unfused."""
    shutil.rmtree(out_dir)
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "EDGETOOL_TFJS_REEXPORT": "1"}
    args = [sys.executable, "-m", "edge_tool.convert.tfjs", str(saved_model), str(out_dir), quant, signature]
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or unsupported_fusions(Path(out_dir) / "model.json"):
        tail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ConversionError(
            f"tensorflowjs fused hard-swish into convolutions of {saved_model} (no tfjs backend runs that) and the "
            f"re-export without oneDNN fusions failed: {tail}"
        )


def read_graph_model_json(model_dir: Path, user: str) -> dict:
    """Parse ``model_dir/model.json``; ModelError unless it is a tfjs graph model (``user`` names who needs one).

    model.json must itself lie inside ``model_dir`` (symlinks resolved), and every weight shard path it lists
    must resolve to a file inside ``model_dir`` (``fsutil.resolve_inside``); see ``weight_paths``.
    """
    from edge_tool.fsutil import resolve_inside  # noqa: PLC0415

    model_json = resolve_inside(Path(model_dir), "model.json", Path(model_dir))
    try:
        if model_json.stat().st_size > MAX_MODEL_JSON_BYTES:
            raise ModelError(f"{model_json} is {model_json.stat().st_size:,} bytes; a model.json over "
                             f"{MAX_MODEL_JSON_BYTES:,} bytes is not a TFJS graph model edgetool reads.")
        doc = json.loads(model_json.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelError(f"{model_json} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != "graph-model":
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ModelError(
            f"{model_json} is a {found!r} TFJS model; {user} runs graph models "
            "(edgetool convert MODEL --format tfjs, or tensorflowjs_converter --input_format tf_saved_model)."
        )
    weight_paths(model_dir, doc)
    return doc


def weight_paths(model_dir: Path, doc: dict) -> list[str]:
    """Shard paths listed in a model.json, each checked to be a file inside ``model_dir``; ModelError otherwise."""
    from edge_tool.fsutil import resolve_inside  # noqa: PLC0415

    model_json = Path(model_dir) / "model.json"
    manifest = doc.get("weightsManifest", [])
    groups_ok = isinstance(manifest, list) and all(
        isinstance(g, dict) and isinstance(g.get("paths", []), list) and isinstance(g.get("weights", []), list)
        for g in manifest)
    if not groups_ok:
        raise ModelError(f"{model_json} has a malformed weightsManifest (expected a list of groups, each with a "
                         "list of 'paths' and a list of 'weights').")
    paths = [p for group in manifest for p in group.get("paths", [])]
    missing = []
    for rel in paths:
        shard = resolve_inside(Path(model_dir), rel, model_json)
        if not shard.is_file():
            missing.append(rel)
    if missing:
        raise ModelError(f"{model_json} lists weight shards that are missing: {', '.join(map(repr, missing))}.")
    return paths


if __name__ == "__main__":  # the re-export child: python -m edge_tool.convert.tfjs SAVED_MODEL OUT QUANT SIGNATURE
    export_tfjs(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4])
