"""What eval feeds: the reference's input contract (resolved once, for the reference and every artefact alike) and
how an image folder's classes map onto the model's outputs (by name when the model has labels)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.contract.options import ContractOptions
from edge_tool.contract.resolve import ProbeSetup, Resolution, image_data, resolve
from edge_tool.metadata.reader import read_metadata
from edge_tool.metadata.tfjs import labels_from_model_json
from edge_tool.models.labelmap import class_width, folder_index_map, guessed_labels_note, model_labels, unfit_labels
from edge_tool.models.readers import Artifact, ArtifactFormat


@dataclass(frozen=True)
class EvalInputs:
    """The contract, the model's labels (and where from), and a folder-class mapper for the eval stream."""

    resolution: Resolution
    labels: list[str] | None
    labels_origin: str
    width: int | None

    def class_map(self, class_names: tuple[str, ...], data: Path) -> tuple[np.ndarray | None, str]:
        """Folder class i → output index, and the report's note (DataError when they do not fit)."""
        return folder_index_map(class_names, self.labels, self.width, data, self.labels_origin)


def _artefact_labels(arts: list[Artifact]) -> tuple[list[str] | None, str]:
    """Labels embedded in an artefact (.tflite metadata, TFJS userDefinedMetadata), the first found."""
    for art in arts:
        if art.format is ArtifactFormat.TFLITE:
            meta = read_metadata(Path(art.model_file).read_bytes())
            if meta is not None and meta.labels:
                return list(meta.labels), f"{art.model_file} (TFLite metadata)"
        elif art.format is ArtifactFormat.TFJS:
            doc = _model_json(art)
            found = labels_from_model_json(doc, str(art.model_file)) if doc else None
            if found:
                return found, str(art.model_file)
    return None, ""


def _model_json(art: Artifact) -> dict | None:
    path = Path(art.model_file)
    path = path if path.name == "model.json" else path / "model.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _artefact_normalization(arts: list[Artifact]) -> tuple | None:
    """(mean, std, origin) of the first artefact's embedded image-input normalization that is not identity."""
    for art in arts:
        if art.format is not ArtifactFormat.TFLITE:
            continue
        meta = read_metadata(Path(art.model_file).read_bytes())
        for t in meta.inputs if meta is not None else ():
            stated = t.stated_normalization()
            if stated is not None:
                return stated.mean, stated.std, f"{art.model_file} (TFLite metadata)"
    return None


def resolve_eval_inputs(
    ref, arts: list[Artifact], data: Path, labels_path: Path | None, options: ContractOptions, seed: int
) -> EvalInputs:
    """Labels (--labels, labels.txt in/beside the reference, an artefact's own), then the input contract: the
    option, the reference model, an artefact's metadata, else measured on ``data`` when it is a labelled folder."""
    labels, origin = model_labels(ref.path, labels_path)
    ignored = () if labels_path is not None else _unfit_guess(labels, origin, ref.signature)
    if ignored:
        labels, origin = None, ""
    if labels is None:
        labels, origin = _artefact_labels(arts)
    width = class_width(ref.signature)
    inputs = EvalInputs(Resolution(warnings=ignored), labels, origin, width)
    if not image_data(Path(data)):  # arrays are fed as stored: no pixels to turn into input
        said = (f"{options.flag()} applies to image data; --data {data} holds arrays, fed as stored.",)
        return EvalInputs(Resolution(warnings=ignored + (said if options.explicit else ())), labels, origin, width)
    probe = None
    if Path(data).is_dir() and width is not None:
        probe = ProbeSetup(
            Path(data), lambda: ref.predict, width, lambda names: inputs.class_map(names, Path(data))[0], seed
        )
    resolution = resolve(ref.signature, ref.path, ref.path, options, Path(data), probe, _artefact_normalization(arts))
    if ignored:
        resolution = dataclasses.replace(resolution, warnings=ignored + tuple(resolution.warnings))
    return EvalInputs(resolution, labels, origin, width)


def _unfit_guess(labels, origin: str, signature) -> tuple[str, ...]:
    """The note for a labels.txt found beside the reference that fits none of its outputs (it is ignored)."""
    why = unfit_labels(labels, origin, signature)
    return () if why is None else (guessed_labels_note(origin, why),)
