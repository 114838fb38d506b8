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
from edge_tool.models.labelmap import guessed_labels_note, unfit_labels


def check_labels(labels: tuple[str, ...], origin: str, config, source) -> str | None:
    """UsageError when --labels fits no output; for a labels file found beside the model, the note saying it is
    ignored (None when the labels fit)."""
    why = unfit_labels(labels, origin, source.signature)
    if why is None:
        return None
    if config.labels is None:
        return guessed_labels_note(origin, why)
    raise UsageError(f"{why}; pass the labels file of this model ({config.model}).")


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
