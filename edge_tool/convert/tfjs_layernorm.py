"""tf_keras' LayerNormalization in TensorFlow.js: computed with plain ops, not a training-mode fused batch norm.

tf_keras computes LayerNormalization's moments with ``fused_batch_norm(..., is_training=True)`` (a
``FusedBatchNormV3`` node with ``is_training: true``). tfjs 4.22 runs every FusedBatchNorm as inference-mode batch
norm with the given mean and variance — here empty tensors — so a Transformer block comes out as NaN on the cpu
backend and as garbage elsewhere, silently. edgetool re-saves a Keras-2 model with its LayerNormalization layers set
to the unfused path (``mean``/``variance`` ops, identical maths) and converts that copy.
"""

from __future__ import annotations

import json
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError
from edge_tool.modelcode.guard import require_no_keras_code

_FUSED_BN = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")


def training_batchnorms(model_json: Path) -> list[str]:
    """Names of FusedBatchNorm nodes with ``is_training: true`` in a tfjs graph model (tfjs computes them wrong)."""
    nodes = json.loads(Path(model_json).read_text()).get("modelTopology", {}).get("node", [])
    return [
        n.get("name", "?")
        for n in nodes
        if n.get("op") in _FUSED_BN and n.get("attr", {}).get("is_training", {}).get("b") is True
    ]


def unfused_copy(saved_model: Path, scratch: Path) -> Path | None:
    """A copy of a Keras-2 SavedModel whose LayerNormalization layers use the unfused path, or None.

    None when the SavedModel has no Keras metadata (a tf.Module, a Keras-3 export) or no LayerNormalization.
    A Keras config carrying Python code is refused here even under --trust-model-code (this re-export runs in a
    child that is not told the flag); re-export the model without the Lambda.
    """
    if not (Path(saved_model) / "keras_metadata.pb").is_file():
        return None
    require_no_keras_code(
        Path(saved_model), False, "Re-exporting its LayerNormalization layers unfused for TFJS needs a Keras object"
    )

    import_tf()
    import tf_keras as keras

    model = keras.models.load_model(str(saved_model), compile=False)
    layers = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.LayerNormalization)]
    if not layers:
        return None
    for layer in layers:
        layer._fused = False
    out = Path(scratch) / "unfused_layernorm"
    model.save(str(out), save_format="tf", include_optimizer=False)
    return out


def refusal(saved_model: Path, nodes: list[str]) -> ConversionError:
    """Why a model with training-mode batch norms cannot go to TFJS, and the ways out."""
    return ConversionError(
        f"{saved_model} computes normalization moments with FusedBatchNormV3(is_training=true) ({len(nodes)} "
        f"node{'s' if len(nodes) != 1 else ''}, e.g. {nodes[0]}) — how tf_keras' LayerNormalization works — and "
        "tensorflowjs 4.22 runs that node as inference-mode batch norm, so the TFJS model's outputs would be NaN or "
        "wrong on every backend. edgetool rewrites this for Keras-2 SavedModels (model.save) automatically; this "
        "one has no Keras metadata. Re-save it from Keras 2, or ship the TFLite artefacts instead (in the browser: "
        "edgetool demo --litert)."
    )
