"""``--model digits``: the small CNN on scikit-learn's bundled handwritten digits (``training.model``)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.training.data import load_digits_split
from edge_tool.training.export import save_keras_model, write_sidecars
from edge_tool.training.kinds.registry import TRAINABLES, Trainable
from edge_tool.training.model import build_model


def _load(config):
    return load_digits_split(config.seed)


def _build(keras, config, decay_steps: int | None):
    return build_model(keras, config.learning_rate, decay_steps)


def _save(model, out: Path, config) -> None:
    save_keras_model(model, out)


def _sidecars(model, out: Path, split, config, metrics: dict) -> dict:
    """labels.txt, eval.npz, train.npz, calibration.npz (train.json is written by the caller)."""
    write_sidecars(out, split, config.calibration_samples, config.seed)
    return {}


TRAINABLES.register(
    Trainable(
        name="digits",
        summary="a small CNN on bundled real 8x8 handwritten digits",
        epochs=12,
        batch_size=64,
        learning_rate=3e-3,
        load=_load,
        build=_build,
        save=_save,
        sidecars=_sidecars,
        output_help="SavedModel + labels.txt, eval.npz, calibration.npz, train.json",
    )
)
