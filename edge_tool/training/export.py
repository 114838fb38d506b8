"""Write the SavedModel plus labels.txt, eval.npz and calibration.npz next to it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from edge_tool.training.data import LABELS, DigitsSplit


def write_sidecars(out: Path, split: DigitsSplit, calibration_samples: int, seed: int, report: dict) -> None:
    """labels.txt, held-out eval.npz (x, y), train.npz (the training split), calibration.npz (a seeded sample of it), train.json."""
    (out / "labels.txt").write_text("\n".join(LABELS) + "\n")
    np.savez(out / "eval.npz", x=split.x_eval, y=split.y_eval)
    np.savez(out / "train.npz", x=split.x_train, y=split.y_train)  # the training split, for QAT fine-tuning
    rng = np.random.default_rng(seed)
    n = min(calibration_samples, len(split.x_train))
    idx = rng.choice(len(split.x_train), size=n, replace=False)
    np.savez(out / "calibration.npz", x=split.x_train[idx], y=split.y_train[idx])
    (out / "train.json").write_text(json.dumps(report, indent=2) + "\n")


def save_keras_model(model, out: Path) -> None:
    """Keras-2 SavedModel (reloadable as Keras, with a ``serving_default`` signature)."""
    model.save(str(out), save_format="tf", include_optimizer=False)
