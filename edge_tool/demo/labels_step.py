"""The labels a demo site shows: --labels, else the labels the model carries (model.json's userDefinedMetadata, the
--tflite file's TFLite metadata), else labels.txt in or beside the model, else the class folders of an image-folder
--calibration; each checked against the model's class count."""

from __future__ import annotations

from pathlib import Path

from edge_tool.core.fsutil import resolve_inside
from edge_tool.demo import model as model_mod
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.contract_step import folder_classes
from edge_tool.demo.model import ModelKind
from edge_tool.errors import ModelError, UsageError
from edge_tool.metadata.reader import read_metadata
from edge_tool.metadata.tfjs import labels_from_model_json
from edge_tool.models.labelmap import guessed_labels_note, labels_file_for
from edge_tool.parsers.limits import read_tflite


def _default_labels_path(model: Path) -> Path | None:
    """labels.txt beside the model, which must really be inside the model dir: its text is published in the site."""
    candidate = Path(model) / "labels.txt"
    if not (candidate.is_file() or candidate.is_symlink()):
        return None
    return resolve_inside(Path(model), "labels.txt", Path(model), UsageError)


def _embedded_labels(cfg: DemoConfig, kind: ModelKind) -> tuple[list[str] | None, str]:
    """Labels the model carries: model.json's userDefinedMetadata, else the --tflite file's TFLite metadata."""
    if kind is ModelKind.TFJS:
        model_json = Path(cfg.model) / "model.json"
        meta, _, _ = model_mod.read_tfjs_model(Path(cfg.model))
        found = labels_from_model_json(meta, str(model_json))
        if found:
            return found, str(model_json)
    if cfg.litert and cfg.tflite is not None:
        embedded = read_metadata(read_tflite(cfg.tflite))
        if embedded is not None and embedded.labels:
            named = cfg.model if kind is ModelKind.TFLITE else cfg.tflite  # not demo's batch-1 copy of it
            return list(embedded.labels), f"{named} (TFLite metadata)"
    return None, ""


def site_labels(cfg: DemoConfig, kind: ModelKind, classes: int | None, inputs) -> tuple[list[str], str]:
    """(labels, origin): --labels, else the labels embedded in the model, else labels.txt in or beside it, else the
    class folders of a --calibration image folder, else none ([], and why when a labels.txt found beside the model
    was ignored because its count does not fit)."""
    if cfg.labels is not None:
        return model_mod.read_labels(cfg.labels, classes), str(cfg.labels)
    found, origin = _embedded_labels(cfg, kind)
    if found is not None:
        if classes is not None and len(found) != classes:
            raise ModelError(
                f"{origin} carries {len(found)} labels but the model outputs {classes} classes; "
                "pass --labels to override."
            )
        return found, origin
    inside = _default_labels_path(Path(cfg.model))
    beside = inside or labels_file_for(Path(cfg.model))
    if beside:
        found = model_mod.read_labels(beside, None)
        if classes is not None and len(found) != classes:  # found by looking, not given: a note, never a stop
            why = f"{beside} has {len(found)} labels but the model outputs {classes} classes"
            return [], guessed_labels_note(str(beside), why)
        return found, str(beside)
    names = folder_classes(cfg.calibration, inputs)
    if names and len(names) == classes:
        return list(names), f"the class folders of {cfg.calibration}"
    return [], ""
