"""Write the digits SavedModel plus labels.txt, eval.npz and calibration.npz next to it; train.json for every model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from edge_tool.training.data import LABELS, DigitsSplit


def write_report(out: Path, report: dict) -> None:
    """train.json: the config, strategy facts, metrics and history of the run."""
    (out / "train.json").write_text(json.dumps(report, indent=2) + "\n")


def write_sidecars(out: Path, split: DigitsSplit, calibration_samples: int, seed: int) -> None:
    """labels.txt, held-out eval.npz (x, y), train.npz (the training split), calibration.npz (a seeded sample of it)."""
    (out / "labels.txt").write_text("\n".join(LABELS) + "\n")
    np.savez(out / "eval.npz", x=split.x_eval, y=split.y_eval)
    np.savez(out / "train.npz", x=split.x_train, y=split.y_train)  # the training split, for QAT fine-tuning
    rng = np.random.default_rng(seed)
    n = min(calibration_samples, len(split.x_train))
    idx = rng.choice(len(split.x_train), size=n, replace=False)
    np.savez(out / "calibration.npz", x=split.x_train[idx], y=split.y_train[idx])


def save_keras_model(model, out: Path) -> None:
    """Keras-2 SavedModel (reloadable as Keras, with a ``serving_default`` signature)."""
    model.save(str(out), save_format="tf", include_optimizer=False)
