"""The reference for one zoo model: its SavedModel's serving signature run by TensorFlow on the eval inputs, and
:func:`compare`, which measures any other run's outputs against it."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class Context:
    """One model: its eval inputs (by signature name), labels, SavedModel outputs, calibration samples, spec."""

    def __init__(self, model_dir: Path, work: Path):
        import tensorflow as tf  # noqa: PLC0415

        from benchmarks.zoo.specs import SPECS  # noqa: PLC0415

        self.tf = tf
        self.model_dir = Path(model_dir)
        self.work = Path(work)
        self.spec = SPECS[self.model_dir.name]
        self.loaded = tf.saved_model.load(str(model_dir))
        self.fn = self.loaded.signatures["serving_default"]
        self.in_specs = self.fn.structured_input_signature[1]
        self.inputs, self.y = self._load(self.model_dir / "eval.npz")
        self.calibration, _ = self._load(self.model_dir / "calibration.npz")
        self.reference = self.saved_model_outputs(self.inputs)
        self.n = len(self.y)

    def _load(self, path: Path) -> tuple[dict, np.ndarray]:
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        y = arrays.pop("y")
        if set(arrays) == {"x"} and len(self.in_specs) == 1:
            arrays = {next(iter(self.in_specs)): arrays["x"]}
        return {k: arrays[k].astype(s.dtype.as_numpy_dtype) for k, s in self.in_specs.items()}, y

    def saved_model_outputs(self, inputs: dict, batch: int = 64) -> dict[str, np.ndarray]:
        """The serving signature's outputs for every sample, in batches."""
        n = len(next(iter(inputs.values())))
        parts: dict[str, list] = {}
        for s in range(0, n, batch):
            out = self.fn(**{k: self.tf.constant(v[s:s + batch]) for k, v in inputs.items()})
            for k, v in out.items():
                parts.setdefault(k, []).append(np.asarray(v, dtype=np.float32))
        return {k: np.concatenate(v) for k, v in parts.items()}


def primary(outputs: dict[str, np.ndarray]) -> str:
    """The class-score head: the first output (by name) with more than one value per sample."""
    for name in sorted(outputs):
        if outputs[name].ndim == 2 and outputs[name].shape[1] > 1:
            return name
    return sorted(outputs)[0]


def compare(ref: dict, got: dict, y: np.ndarray | None) -> dict:
    """Agreement and accuracy on the primary head, max abs error (absolute and relative to scale) over all heads."""
    missing = sorted(set(ref) - set(got))
    if missing:
        return {"error": f"outputs {missing} missing (got {sorted(got)})"}
    head = primary(ref)
    n = min(len(ref[head]), len(got[head]))
    metrics = {"samples": n, "head": head}
    worst = 0.0
    for name in ref:
        a, b = ref[name][:n].reshape(n, -1), got[name][:n].reshape(n, -1)
        if a.shape != b.shape:
            return {"error": f"output {name}: shape {b.shape[1:]} where the SavedModel gives {a.shape[1:]}"}
        if (~np.isfinite(b) & np.isfinite(a)).any():  # max() would silently skip a NaN
            return {"error": f"output {name}: NaN/Inf where the SavedModel's output is finite"}
        worst = max(worst, float(np.abs(a - b).max() / max(1.0, float(np.abs(a).max()))))
    metrics["max_rel_error"] = worst
    metrics["agreement"] = float((ref[head][:n].argmax(-1) == got[head][:n].argmax(-1)).mean())
    if y is not None:
        metrics["accuracy"] = float((got[head][:n].argmax(-1) == y[:n]).mean())
        metrics["reference_accuracy"] = float((ref[head][:n].argmax(-1) == y[:n]).mean())
    return metrics
