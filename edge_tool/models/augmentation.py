"""Random augmentation layers left running in a SavedModel's serving graph, read from the MetaGraph without running it.

Keras 3's ``model.export()`` serves ``model.__call__`` without a ``training`` argument, and its augmentation layers
(RandomFlip, RandomRotation, RandomZoom, RandomContrast, ...) default to ``training=True``: the exported signature
flips, rotates and zooms every input at random (stateless random ops, ImageProjectiveTransformV3), so it is not the
model that was trained, and the ops need TF (Flex) kernels. A converted file would run them too. At inference
these layers are the identity, so the way out is an export that calls the model with ``training=False`` (or the
model's ``.keras`` file, which edgetool exports that way itself). Only nodes the signature executes count: a
tf_keras SavedModel keeps the layers' training-mode functions in its library, but its signature never calls them.
"""

from __future__ import annotations

import re
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.models.signatures import read_meta_graph, saved_model_signature
from edge_tool.trust.reach import executed_by

# Keras's augmentation layers, by their default (snake_case) names; "_<n>" suffixes are name-scope counters
_LAYER = re.compile(r"^(random_[a-z_]+?|rand_augment|aug_mix|cut_mix|mix_up|solarization)(?:_\d+)*$")
_RNG_OPS = ("RngReadAndSkip", "RngSkip", "Multinomial", "StatelessMultinomial")


def _random(op: str) -> bool:
    return "Random" in op or op.startswith("StatefulUniform") or op in _RNG_OPS


def _layer_of(node_name: str) -> tuple[str, str] | None:
    """(scope path up to the augmentation layer, its Keras class) when ``node_name`` lies inside one, else None."""
    parts = node_name.split("/")
    for i, part in enumerate(parts[:-1]):
        found = _LAYER.match(part)
        if found:
            cls = "".join(w.capitalize() for w in found.group(1).split("_"))
            return "/".join(parts[: i + 1]), cls
    return None


def augmentation_layers(saved_model: Path, signature: str) -> tuple[str, ...]:
    """``scope (Class)`` of each Keras augmentation layer whose random ops the signature executes, in graph order;
    () when none (or when the SavedModel cannot be read: other checks say why)."""
    try:
        mg = read_meta_graph(Path(saved_model))
    except ModelError:
        return ()
    reached = executed_by(mg, signature)
    if reached is None:
        return ()
    nodes, functions = reached
    found: dict[str, str] = {}
    candidates = [n for n in mg.graph_def.node if n.name in nodes]
    candidates += [n for f in mg.graph_def.library.function if f.signature.name in functions for n in f.node_def]
    for node in candidates:
        layer = _layer_of(node.name) if _random(node.op) else None
        if layer is not None:
            found.setdefault(*layer)
    return tuple(f"{scope} ({cls})" for scope, cls in found.items())


def refuse_training_only_ops(saved_model: Path, signature: str, model: Path) -> None:
    """ModelError naming the augmentation layers when ``signature`` runs them (see the module doc), with the
    export that leaves them out, written for this signature's input."""
    layers = augmentation_layers(saved_model, signature)
    if not layers:
        return
    classes = ", ".join(dict.fromkeys(layer.rsplit(" (", 1)[1][:-1] for layer in layers))
    raise ModelError(
        f"{model}'s signature {signature!r} runs Keras augmentation layers ({classes}), which are the identity at "
        "inference: this export calls the model without training=False (Keras 3's model.export() does), so their "
        "random ops (which also need TF Flex kernels) would flip/rotate/zoom every input at random, in the "
        "SavedModel and in any converted file. Give edgetool the model's .keras file instead (edgetool exports it "
        "with training=False and leaves these layers out), or export it so in Keras 3: "
        f"{_export_code(saved_model, signature)} (the layers, by graph scope: {', '.join(layers)})"
    )


def _export_code(saved_model: Path, signature: str) -> str:
    """The short Keras 3 export that serves ``model(x, training=False)``, with this signature's input spec."""
    spec = "keras.InputSpec(...)"
    try:
        inputs = saved_model_signature(Path(saved_model), signature).inputs
    except ModelError:
        inputs = ()
    if len(inputs) == 1 and inputs[0].shape:
        dims = [None, *inputs[0].shape[1:]]  # any batch
        shape = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
        spec = f'keras.InputSpec(shape={shape}, dtype="{inputs[0].dtype}")'
    return (
        "archive = keras.export.ExportArchive(); archive.track(model); "
        f'archive.add_endpoint("serve", lambda x: model(x, training=False), input_signature=[{spec}]); '
        'archive.write_out("exported")'
    )


def inference_only_note(model: str, layers: tuple[str, ...]) -> str:
    """What convert says of a Keras file's training-only layers (``source.inference_only`` in the manifest)."""
    return (
        f"{model}: left out {', '.join(layers)}: layers active in training only (random augmentation), the "
        "identity at inference. The model is exported with training=False, as it runs at inference."
    )
