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
import tempfile
from pathlib import Path

from edge_tool.convert.tfjs_layernorm import refusal, training_batchnorms, unfused_copy
from edge_tool.converter.diagnose import python_callback_refusal, python_callbacks
from edge_tool.core.childproc import module_command
from edge_tool.core.env import configure_tf_env
from edge_tool.errors import ConversionError, UsageError
from edge_tool.models.signature_choice import numeric_signature_way_out

TFJS_WEIGHT_QUANT = ("none", "float16", "uint8", "uint16")
SHARD_BYTES = 4 * 1024 * 1024  # tfjs default; browsers fetch the shards in parallel


def tfjs_refusal(source) -> str | None:
    """Why tensorflowjs cannot convert this prepared source at all (string inputs, Python callbacks), or None."""
    refused = string_input_refusal(source.signature, source.original)
    callbacks = None if refused else python_callbacks(source.saved_model, source.signature.key)
    return refused or (python_callback_refusal(source.original, callbacks) if callbacks else None)


def string_input_refusal(signature, model) -> str | None:
    """Why tensorflowjs cannot convert a signature with string inputs (its converter crashes on them), or None."""
    names = [t.name for t in signature.inputs if t.dtype in ("string", "object", "bytes")]
    if not names:
        return None
    return (
        f"tensorflowjs 4.22 cannot convert {model}: its input {', '.join(names)} is a string tensor, and "
        "TensorFlow.js graph models take numeric tensors only (its converter fails on the string ops)."
        + numeric_signature_way_out(model, signature.key)
        + " Keep the "
        "string preprocessing (tokenizing, TextVectorization, lookups) outside the model and export the "
        "numeric part for TFJS, or use --format tflite (TFLite runs string ops with --allow-select-tf-ops)."
    )


_UNSUPPORTED = "Unsupported Ops in the model"
# ops tensorflowjs 4.22 has no kernel for, and where they come from in a Keras model
_OP_ORIGINS = {
    "Erfc": "exact GELU: tf.nn.gelu / Keras activation 'gelu' with approximate=False",
    "Erf": "exact GELU (keras.ops.gelu with approximate=False)",
}


def unsupported_ops(exc: Exception) -> list[str]:
    """The op names of tensorflowjs' 'Unsupported Ops in the model …' error (its second line), else []."""
    lines = str(exc).strip().splitlines()
    if not lines or not lines[0].startswith(_UNSUPPORTED) or len(lines) < 2:
        return []
    return [op.strip() for op in lines[1].split(",") if op.strip()]


def unsupported_ops_message(ops: list[str]) -> str:
    """The refusal for a graph with ops tensorflowjs has no kernel for: which, where they come from, the way out."""
    named = ", ".join(f"{op} ({_OP_ORIGINS[op]})" if op in _OP_ORIGINS else op for op in ops)
    return (
        f"tensorflowjs 4.22 cannot convert this model: TensorFlow.js has no kernel for {named}. For a browser "
        "demo use `edgetool demo MODEL --litert` (LiteRT.js runs the .tflite, which has these ops), or rebuild "
        "the model for TF.js without them (e.g. gelu with approximate=True), then convert again."
    )


def ops_from_refusal(text: str) -> list[str]:
    """The op names in a refusal written by ``unsupported_ops_message`` (check's tfjs target lists them)."""
    head, sep, rest = text.partition("TensorFlow.js has no kernel for ")
    if not sep:
        return []
    named = rest.split(". For a browser demo", 1)[0]
    return [part.split(" (", 1)[0].strip() for part in named.split(", ") if part.strip() and not part.startswith(" ")]


def export_tfjs(
    saved_model: Path,
    out_dir: Path,
    weight_quant: str | None = None,
    signature: str = "serving_default",
    user_metadata: dict | None = None,
    _unfused: bool = False,
) -> Path:
    """Convert a SavedModel to a tfjs graph model (model.json + shards) in ``out_dir``; return model.json's path.

    ``user_metadata`` (labels, input normalization) lands in model.json's ``userDefinedMetadata``, which tfjs
    exposes as ``GraphModel.metadata``.
    """
    quant = weight_quant or "none"
    if quant not in TFJS_WEIGHT_QUANT:
        raise UsageError(f"--tfjs-quant must be one of {', '.join(TFJS_WEIGHT_QUANT)}, got {quant!r}.")

    configure_tf_env()
    from tensorflowjs.converters import tf_saved_model_conversion_v2 as tfjs_conv

    log = io.StringIO()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    qmap = None if quant == "none" else {quant: "*"}
    try:
        with contextlib.redirect_stdout(log):
            tfjs_conv.convert_tf_saved_model(
                str(saved_model),
                str(out_dir),
                signature_def=signature,
                saved_model_tags="serve",
                quantization_dtype_map=qmap,
                weight_shard_size_bytes=SHARD_BYTES,
                metadata=user_metadata or None,
            )
    except (ValueError, KeyError, RuntimeError) as exc:
        if ops := unsupported_ops(exc):
            raise ConversionError(unsupported_ops_message(ops)) from None
        raise ConversionError(
            f"tensorflowjs could not convert {saved_model}: {exc}\n{log.getvalue()[-2000:]}"
        ) from None
    model_json = out_dir / "model.json"
    fmt = json.loads(model_json.read_text()).get("format")
    if fmt != "graph-model":
        raise ConversionError(f"tensorflowjs wrote a {fmt!r} model; expected a graph-model.")
    if tables := resource_inputs(model_json):
        raise ConversionError(
            f"tensorflowjs 4.22 turned the lookup table of {saved_model} (a StaticHashTable, StringLookup or "
            f"IntegerLookup) into a resource input of the graph model ({', '.join(tables)}: DT_RESOURCE), which "
            "TF.js in edgetool's runner and in the demo page cannot feed, so the model does not run there. Keep "
            "the lookup out of the browser model (map class ids to labels in the app: edgetool puts labels.txt "
            "into the page), or use --format tflite (TFLite runs static tables as builtin HASHTABLE ops)."
        )
    if nodes := training_batchnorms(model_json):
        if _unfused:
            raise refusal(saved_model, nodes)
        _reexport_unfused(saved_model, out_dir, quant, user_metadata, nodes)  # oneDNN off there too
    elif not _IN_REEXPORT and unsupported_fusions(model_json):
        _reexport_without_onednn(saved_model, out_dir, quant, signature, user_metadata)
    return model_json


def _reexport_unfused(saved_model: Path, out_dir: Path, quant: str, user_metadata: dict | None, nodes) -> None:
    """Convert again from a copy whose LayerNormalization layers compute moments with plain ops (tfjs_layernorm).

    Without oneDNN fusions: grappler would otherwise fuse those ops into ``_MklLayerNorm``, which tfjs lacks.
    """
    with tempfile.TemporaryDirectory(prefix="edgetool-tfjs-") as tmp:
        copy = unfused_copy(saved_model, Path(tmp))
        if copy is None:
            raise refusal(saved_model, nodes)
        shutil.rmtree(out_dir)
        proc = _child_export(copy, out_dir, quant, "serving_default", user_metadata, Path(tmp))
    if proc.returncode != 0:  # the child refuses itself when training-mode batch norms remain
        raise ConversionError(
            f"tensorflowjs could not convert {saved_model} with its LayerNormalization layers unfused (needed: "
            f"tfjs computes the fused form wrong): {_last_line(proc.stderr)}"
        )


def _child_export(
    saved_model: Path, out_dir: Path, quant: str, signature: str, user_metadata: dict | None, scratch: Path
) -> subprocess.CompletedProcess:
    """export_tfjs in a fresh process with oneDNN's grappler fusions off (TF reads that setting once, at import)."""
    meta = Path(scratch) / "user_metadata.json"
    meta.write_text(json.dumps(user_metadata or {}))
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "EDGETOOL_TFJS_REEXPORT": "1"}
    args = module_command("edge_tool.convert.tfjs", saved_model, out_dir, quant, signature, meta)
    return subprocess.run(args, capture_output=True, text=True, env=env)


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[-1]


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


def _reexport_without_onednn(
    saved_model: Path, out_dir: Path, quant: str, signature: str, user_metadata: dict | None
) -> None:
    """Convert again in a fresh process with TF_ENABLE_ONEDNN_OPTS=0, so grappler leaves hard-swish unfused."""
    shutil.rmtree(out_dir)
    with tempfile.TemporaryDirectory(prefix="edgetool-tfjs-") as tmp:
        proc = _child_export(saved_model, out_dir, quant, signature, user_metadata, Path(tmp))
    if proc.returncode != 0 or unsupported_fusions(Path(out_dir) / "model.json"):
        raise ConversionError(
            f"tensorflowjs fused hard-swish into convolutions of {saved_model} (no tfjs backend runs that) and the "
            f"re-export without oneDNN fusions failed: {_last_line(proc.stderr)}"
        )


if __name__ == "__main__":  # the re-export child: python -m edge_tool.convert.tfjs SAVED_MODEL OUT QUANT SIGNATURE META
    export_tfjs(
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        sys.argv[3],
        sys.argv[4],
        json.loads(Path(sys.argv[5]).read_text()) or None,
        _unfused=True,
    )


def resource_inputs(model_json: Path) -> list[str]:
    """Names of the graph model's signature inputs that are resources (a lookup table tensorflowjs hoisted out)."""
    signature = json.loads(Path(model_json).read_text()).get("signature") or {}
    return sorted(n for n, t in (signature.get("inputs") or {}).items() if t.get("dtype") == "DT_RESOURCE")
