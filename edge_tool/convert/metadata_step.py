"""What ``convert`` embeds as model metadata: labels (--labels, labels.txt inside or beside the model, else the
class folders of image-folder calibration data) and the input normalization of the resolved input contract
(``edge_tool.contract``).

Metadata is embedded when labels are known or the input is not raw 0..255 pixels (or --input-* was given);
otherwise nothing is known that the converter's output lacks, and the .tflite stays byte-identical to
``tf.lite.TFLiteConverter``'s.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from edge_tool import __version__
from edge_tool.errors import UsageError
from edge_tool.metadata.writer import MetadataSpec


def classes_outputs(signature, count: int) -> list:
    """The signature outputs with one score per label on their last axis: [N, count] (a class or tag per sample),
    [N, H, W, count] or [N, T, count] (a class per pixel or step: segmentation, tagging)."""
    return [t for t in signature.outputs if t.shape is not None and len(t.shape) >= 2 and t.shape[-1] == count]


def check_labels(labels: tuple[str, ...], origin: str, config, source) -> None:
    """UsageError when no output has one score per label."""
    if labels and not classes_outputs(source.signature, len(labels)):
        shapes = ", ".join(
            f"{t.name} {list(t.shape) if t.shape is not None else '?'}" for t in source.signature.outputs
        )
        raise UsageError(
            f"{origin} has {len(labels)} labels, but no output of {config.model} has {len(labels)} "
            f"scores on its last axis ([N, {len(labels)}], or [N, H, W, {len(labels)}] per pixel; "
            f"outputs: {shapes}); pass the labels file of this model."
        )


def metadata_spec(config, source, labels: tuple[str, ...], contracts: tuple) -> MetadataSpec | None:
    """The spec to embed in every .tflite of this run (None with --no-metadata, or when nothing is known)."""
    image = contracts[0] if contracts else None
    explicit = any(c.source == "option" for c in contracts)
    if not config.metadata or (not labels and not explicit and (image is None or image.identity)):
        return None  # nothing known to embed: the .tflite stays byte-identical to the converter's
    name = Path(config.model).stem if Path(config.model).is_file() else Path(config.model).resolve().name
    return MetadataSpec(
        name=name or "model",
        description="",
        version=source.sha256[:12],
        author=f"edgetool {__version__}",
        labels=tuple(labels),
        mean=_compact(image.mean) if image else (0.0,),
        std=_compact(image.std) if image else (1.0,),
    )


def _compact(values: tuple[float, ...]) -> tuple[float, ...]:
    """One value when every channel has the same (what metadata readers and older files show)."""
    return values[:1] if len(set(values)) == 1 else tuple(values)


def for_mode(spec: MetadataSpec, mode: str, flavor: str) -> MetadataSpec:
    """``spec`` with the description of one artefact."""
    return replace(
        spec,
        description=f"{spec.name}: {mode} TFLite model converted by edgetool {__version__} from a {flavor} SavedModel.",
    )


def tfjs_user_metadata(spec: MetadataSpec | None, contracts: tuple = ()) -> dict | None:
    """userDefinedMetadata for model.json: labels, input normalization and the input contract records (None
    with --no-metadata)."""
    if spec is None:
        return None
    return {
        "labels": list(spec.labels),
        "input_normalization": {"mean": list(spec.mean), "std": list(spec.std)},
        "input_contract": [c.to_dict() for c in contracts],
        "name": spec.name,
        "version": spec.version,
        "author": spec.author,
    }
