"""What ``convert`` embeds as model metadata: labels (--labels, else labels.txt beside the SavedModel) and input
normalization (--input-mean/--input-std, else identity: edgetool's models scale raw 0..255 pixels themselves).

Metadata is embedded when labels are known or a normalization is given; otherwise nothing is known that the
converter's output lacks, and the .tflite stays byte-identical to ``tf.lite.TFLiteConverter``'s.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from edge_tool import __version__
from edge_tool.errors import UsageError
from edge_tool.metadata.labels import read_labels_file
from edge_tool.metadata.writer import MetadataSpec

DEFAULT_LABELS = "labels.txt"
# Keras-2 models keep layer class names in keras_metadata.pb; Keras-3 exports and tf.function graphs name ops
# after the layer ("rescaling/mul"). Either shows the model scales its input itself.
_SCALING = re.compile(rb'"class_name": "Rescaling"|\brescaling(_\d+)?/')
_SCAN_BYTES = 64 * 1024 * 1024


def resolve_labels(model: Path, labels: Path | None) -> Path | None:
    """--labels, else labels.txt beside a SavedModel directory, else None."""
    if labels is not None:
        return Path(labels)
    beside = Path(model) / DEFAULT_LABELS if Path(model).is_dir() else None
    return beside if beside is not None and beside.is_file() else None


def scales_inside(saved_model: Path) -> bool:
    """True when the SavedModel has a Rescaling layer (so it takes raw 0..255 pixels)."""
    for name in ("keras_metadata.pb", "saved_model.pb"):
        path = Path(saved_model) / name
        if path.is_file():
            with open(path, "rb") as fh:
                if _SCALING.search(fh.read(_SCAN_BYTES)):
                    return True
    return False


def _classes(signature, count: int) -> list:
    return [t for t in signature.outputs if t.shape is not None and len(t.shape) == 2 and t.shape[-1] == count]


def metadata_spec(config, source) -> tuple[MetadataSpec | None, list[str]]:
    """The spec to embed in every .tflite of this run (None with --no-metadata) and warnings to print."""
    labels_path = resolve_labels(config.model, config.labels)
    explicit = config.input_mean is not None or config.input_std is not None
    if not config.metadata or (labels_path is None and not explicit):
        return None, []  # nothing known to embed: the .tflite stays byte-identical to the converter's
    warnings = []
    labels: tuple[str, ...] = ()
    if labels_path is not None:
        labels = tuple(read_labels_file(labels_path, None))
        if not _classes(source.signature, len(labels)):
            shapes = ", ".join(f"{t.name} {list(t.shape) if t.shape is not None else '?'}" for t in source.signature.outputs)
            raise UsageError(f"{labels_path} has {len(labels)} labels, but no output of {config.model} has shape "
                             f"[N, {len(labels)}] (outputs: {shapes}); pass the labels file of this model.")
    images = [t for t in source.signature.inputs if t.shape is not None and len(t.shape) == 4 and t.shape[-1] in (1, 3)]
    for opt, values in (("--input-mean", config.input_mean), ("--input-std", config.input_std)):
        bad = [t for t in images if values is not None and len(values) not in (1, t.shape[-1])]
        if bad:
            raise UsageError(f"{opt} has {len(values)} values, but input {bad[0].name} has {bad[0].shape[-1]} "
                             f"channel(s); give 1 value or {bad[0].shape[-1]}.")
    if images and not explicit and "float" in images[0].dtype and not scales_inside(source.saved_model):
        warnings.append(f"{config.model} has no Rescaling layer; the metadata says its input takes raw 0..255 pixel "
                        "values (mean 0, std 1). If it expects normalized input, pass --input-mean/--input-std.")
    name = Path(config.model).stem if Path(config.model).is_file() else Path(config.model).resolve().name
    spec = MetadataSpec(
        name=name or "model", description="", version=source.sha256[:12], author=f"edgetool {__version__}",
        labels=labels, mean=tuple(config.input_mean or (0.0,)), std=tuple(config.input_std or (1.0,)))
    return spec, warnings


def for_mode(spec: MetadataSpec, mode: str, flavor: str) -> MetadataSpec:
    """``spec`` with the description of one artefact."""
    return replace(spec, description=f"{spec.name}: {mode} TFLite model converted by edgetool {__version__} from a "
                                     f"{flavor} SavedModel.")


def tfjs_user_metadata(spec: MetadataSpec | None) -> dict | None:
    """userDefinedMetadata for model.json: labels and input normalization (None with --no-metadata)."""
    if spec is None:
        return None
    return {"labels": list(spec.labels), "input_normalization": {"mean": list(spec.mean), "std": list(spec.std)},
            "name": spec.name, "version": spec.version, "author": spec.author}
