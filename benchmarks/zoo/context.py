"""The reference for one zoo model: its SavedModel's serving signature (or its ``.keras`` file's Keras 3 model) run by
TensorFlow on the eval inputs, and :func:`compare`, which measures any other run's outputs against it the way the
model's task is measured (``tests/oracles/task_metrics``: arg-max, per label, per pixel, R², box IoU)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from benchmarks.zoo.specs import SPECS
from tests.oracles import output_metrics as om
from tests.oracles import task_metrics as tm


class Context:
    """One model: its eval inputs (by signature name), labels, SavedModel outputs, calibration samples, spec."""

    def __init__(self, model_dir: Path, work: Path):
        import tensorflow as tf

        self.tf = tf
        self.model_dir = Path(model_dir)
        self.work = Path(work)
        self.spec = SPECS[self.model_dir.name]
        self.source = self.model_dir / self.spec.model_file if self.spec.model_file else self.model_dir
        if self.spec.op_library:
            importlib.import_module(self.spec.op_library)  # registers the graph's custom ops in TensorFlow
        if self.spec.model_file and self.source.is_file():
            self.keras_model, self.fn, self.in_specs = _keras_file(tf, self.source)
            self.loaded = None
        else:
            self.loaded, self.keras_model = tf.saved_model.load(str(self.source)), None
            self.fn = self.loaded.signatures[self.spec.data_signature]
            self.in_specs = self.fn.structured_input_signature[1]
        self.inputs, self.y = self._load(self.model_dir / "eval.npz")
        self.calibration, _ = self._load(self.model_dir / "calibration.npz")
        self.reference = self.saved_model_outputs(self.inputs)
        self.n = len(self.y)

    def _load(self, path: Path) -> tuple[dict, np.ndarray]:
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        y = arrays.pop("y")
        if "x" in arrays and len(self.in_specs) == 1:  # other arrays (reference boxes) are not inputs
            arrays = {next(iter(self.in_specs)): arrays["x"]}
        return {
            k: arrays[k] if s.dtype == self.tf.string else arrays[k].astype(s.dtype.as_numpy_dtype)
            for k, s in self.in_specs.items()
        }, y

    def fixed_batch(self) -> int | None:
        """The batch the signature fixes (a graph traced at batch 1: NMS inside), else None."""
        sizes = {s.shape[0] for s in self.in_specs.values() if s.shape.rank and s.shape[0] is not None}
        return sizes.pop() if len(sizes) == 1 else None

    def saved_model_outputs(self, inputs: dict, batch: int = 64) -> dict[str, np.ndarray]:
        """The serving signature's outputs for every sample, in batches (of the signature's own, when it fixes one:
        TensorFlow may run a larger batch through it and give per-batch, not per-sample, results)."""
        batch = self.fixed_batch() or batch
        n = len(next(iter(inputs.values())))
        parts: dict[str, list] = {}
        for s in range(0, n, batch):
            out = self.fn(**{k: self.tf.constant(v[s : s + batch]) for k, v in inputs.items()})
            for k, v in out.items():
                v = np.asarray(v)
                parts.setdefault(k, []).append(v.astype(bytes) if v.dtype.kind in "OSU" else v.astype(np.float32))
        return {k: np.concatenate(v) for k, v in parts.items()}


def _keras_file(tf, path: Path):
    """(model, fn(**inputs) -> {output name: tensor}, {input name: TensorSpec}) of a Keras 3 ``.keras`` file."""
    import keras

    layers = path.parent / "layers.py"  # custom classes: the oracle defines them as the user's script would
    if layers.is_file():
        spec = importlib.util.spec_from_file_location("zoo_custom_layers", layers)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    model = keras.saving.load_model(str(path), compile=False)
    specs = {t.name: tf.TensorSpec(t.shape, t.dtype, name=t.name) for t in model.inputs}
    # a Keras 3 Sequential has no output_names: its one output is output_0, as model.export() names it
    names = list(getattr(model, "output_names", None) or [f"output_{i}" for i in range(len(model.outputs))])

    def fn(**inputs):
        out = model([inputs[k] for k in specs] if len(specs) > 1 else next(iter(inputs.values())), training=False)
        return dict(zip(names, out if isinstance(out, (list, tuple)) else [out]))

    return model, fn, specs


def primary(outputs: dict[str, np.ndarray]) -> str:
    """The class-score head: the first output (by name) with more than one value per sample."""
    for name in sorted(outputs):
        if outputs[name].ndim == 2 and outputs[name].shape[1] > 1:
            return name
    return sorted(outputs)[0]


def compare(ref: dict, got: dict, y: np.ndarray | None, task: str = "classification") -> dict:
    """Task-aware agreement and main metric ('accuracy': accuracy, macro F1, R², mIoU or box IoU with the
    reference) on the primary head, and max abs error (absolute and relative to scale) over all heads."""
    if len(ref) == len(got) == 1 and set(ref) != set(got):  # one head: its name is the converter's business
        got = {next(iter(ref)): next(iter(got.values()))}
    missing = sorted(set(ref) - set(got))
    if missing:
        return {"error": f"outputs {missing} missing (got {sorted(got)})"}
    strings = sorted(k for k in ref if ref[k].dtype.kind in "SU")  # compared as strings: exact-equality rate
    numeric = {k: v for k, v in ref.items() if k not in strings}
    head = primary(numeric) if task != "detection" else next(n for n in sorted(numeric) if not _is_boxes(n, ref[n]))
    n = min(len(ref[head]), len(got[head]))
    metrics = {"samples": n, "head": head, "task": task}
    for name in strings:
        same = np.asarray(got[name][:n]).astype(bytes).reshape(n, -1) == ref[name][:n].astype(bytes).reshape(n, -1)
        metrics[f"string_equal_{name}"] = float(same.all(axis=1).mean())
        if (
            metrics[f"string_equal_{name}"] < 1.0 - 1e-9
            and not (np.asarray(got[head][:n]).argmax(-1) != ref[head][:n].argmax(-1)).any()
        ):
            return {"error": f"string output {name}: differs from the reference where the scores agree"}
    ref, got = numeric, {k: v for k, v in got.items() if k not in strings}
    worst = 0.0
    for name in ref:
        a, b = ref[name][:n].reshape(n, -1), got[name][:n].reshape(n, -1)
        if a.shape != b.shape:
            return {"error": f"output {name}: shape {b.shape[1:]} where the reference gives {a.shape[1:]}"}
        if (~np.isfinite(b) & np.isfinite(a)).any():  # max() would silently skip a NaN
            return {"error": f"output {name}: NaN/Inf where the reference's output is finite"}
        worst = max(worst, float(np.abs(a - b).max() / max(1.0, float(np.abs(a).max()))))
    metrics["max_rel_error"] = worst
    got = {k: np.reshape(got[k][:n], ref[k][:n].shape) for k in ref}  # a page may give flat values per sample
    r, g = ref[head][:n], got[head]
    metrics.update(_TASKS[task](ref, got, r, g, None if y is None else y[:n], n))
    return metrics


def _is_boxes(name: str, value: np.ndarray) -> bool:
    return "box" in name.lower() and value.shape[-1] == 4


def _classification(ref, got, r, g, y, n) -> dict:
    m = {"agreement": tm.argmax_agreement(r, g)}
    if y is not None:
        m.update(accuracy=float((g.argmax(-1) == y).mean()), reference_accuracy=float((r.argmax(-1) == y).mean()))
    return m


def _multilabel(ref, got, r, g, y, n) -> dict:
    m = {"agreement": tm.label_agreement(r, g)}
    if y is not None:
        m.update(
            accuracy=tm.multilabel_f1_macro(g, y),
            reference_accuracy=tm.multilabel_f1_macro(r, y),
            per_label_accuracy=tm.per_label_accuracy(g, y),
        )
    return m


def _regression(ref, got, r, g, y, n) -> dict:
    m = {"agreement": tm.regression_agreement(r, g)}
    if y is not None:
        m.update(accuracy=tm.r2(g, y), reference_accuracy=tm.r2(r, y), mae=tm.mae(g, y), reference_mae=tm.mae(r, y))
    return m


def _segmentation(ref, got, r, g, y, n) -> dict:
    m = {"agreement": tm.pixel_agreement(r, g)}
    if y is not None:
        m.update(
            accuracy=tm.mean_iou(g, y), reference_accuracy=tm.mean_iou(r, y), pixel_accuracy=tm.pixel_accuracy(g, y)
        )
    return m


def _detection(ref, got, r, g, y, n) -> dict:
    """Class head: arg-max agreement and accuracy; box heads: IoU with the reference's boxes (the main metric)."""
    boxes = [k for k in sorted(ref) if _is_boxes(k, ref[k])]
    iou = float(np.mean([tm.box_iou(ref[k][:n], got[k][:n]).mean() for k in boxes])) if boxes else 1.0
    m = {"agreement": tm.argmax_agreement(r, g), "box_iou": iou, "accuracy": iou, "reference_accuracy": 1.0}
    if y is not None:
        m["class_accuracy"] = float((g.argmax(-1) == y).mean())
    return m


def _embedding(ref, got, r, g, y, n) -> dict:
    """Mean cosine to the reference's embeddings; recall@1 with the labels as identities."""
    m = {"agreement": om.mean_cosine(r, g)}
    if y is not None:
        m.update(accuracy=om.recall_at_1(g, y), reference_accuracy=om.recall_at_1(r, y))
    return m


def _image(ref, got, r, g, y, n) -> dict:
    """Values within 5 % of the range (as regression); PSNR against the target images."""
    m = {"agreement": tm.regression_agreement(r, g)}
    if y is not None:
        m.update(accuracy=om.psnr(g, y), reference_accuracy=om.psnr(r, y))
    return m


def _heatmap(ref, got, r, g, y, n) -> dict:
    """Share of keypoints at the reference's peak; PCK@0.1 against the target maps."""
    m = {"agreement": om.peak_agreement(r, g)}
    if y is not None:
        m.update(accuracy=om.pck(g, y), reference_accuracy=om.pck(r, y))
    return m


def _keypoints(ref, got, r, g, y, n) -> dict:
    """Share of keypoints at the reference's peak; PCK@0.1 against the (x, y) labels (the zoo's keypoint row:
    a 32x32 input, ``KEYPOINT_INPUT``)."""
    m = {"agreement": om.peak_agreement(r, g)}
    if y is not None:
        m.update(
            accuracy=om.coordinate_pck(g, y, KEYPOINT_INPUT), reference_accuracy=om.coordinate_pck(r, y, KEYPOINT_INPUT)
        )
    return m


KEYPOINT_INPUT = (32, 32)
_TASKS = {
    "classification": _classification,
    "multilabel": _multilabel,
    "regression": _regression,
    "segmentation": _segmentation,
    "detection": _detection,
    "embedding": _embedding,
    "image": _image,
    "heatmap": _heatmap,
    "keypoints": _keypoints,
}
