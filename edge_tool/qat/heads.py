"""The heads QAT fine-tunes: what each output is (its eval task), its distillation targets, loss and score.

Each output's task is decided by eval's task logic (``edge_tool.tasks``): output shape, the final
activation in the Keras config, the labels. A k-class head (softmax probabilities or logits) trains with
categorical cross-entropy; a sigmoid / multi-label head (or one binary unit) with binary cross-entropy; a regression
head (and a box head), an image or a heatmap head with mean squared error; a segmentation head with per-pixel
categorical cross-entropy; an embedding head (L2-normalised rows) distils the float model's embeddings by cosine
similarity (its labels are identities, not vectors). Its labels are checked by that task and its score is that task's
main metric (accuracy, f1_macro, r2, miou, recall_at_1, psnr, pck), the one ``eval --max-drop`` gates — the one QAT
is compared with int8 PTQ on. Whether outputs are probabilities or logits is decided from the float model's own outputs
on the training data (non-negative rows summing to 1 are probabilities), so TF-op softmaxes count too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, ModelError
from edge_tool.tasks import TASKS, TaskContext, get_task
from edge_tool.tasks.detection import is_box_output
from edge_tool.tasks.embedding import normalised
from edge_tool.tasks.infer import infer_task

QAT_TASKS = tuple(name for name, task in TASKS.items() if task.qat_head)
VALUE_TASKS = tuple(name for name, task in TASKS.items() if task.value_outputs)  # compared as numbers, not decisions


@dataclass(frozen=True)
class Head:
    """One model output and the task it is trained and scored as."""

    name: str
    index: int  # position among the model's outputs
    classes: int  # size of the last axis (k classes, labels, channels or values)
    probabilities: bool  # outputs are probabilities (softmax / sigmoid) rather than logits
    task: str = "classification"

    @property
    def independent(self) -> bool:
        """Each value its own yes/no (sigmoid): multi-label heads and single binary units."""
        return self.task == "multilabel" or (self.task == "classification" and self.classes == 1)

    def probs(self, out: np.ndarray) -> np.ndarray:
        """Outputs as probabilities (regression: as they are)."""
        out = np.asarray(out, np.float64)
        if self.probabilities or self.task in VALUE_TASKS:
            return out
        if self.independent or self.classes == 1:
            return 1.0 / (1.0 + np.exp(-out))
        e = np.exp(out - out.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def predict(self, out: np.ndarray) -> np.ndarray:
        """Decisions: class ids (per sample or per pixel), 0/1 per label, or the values for regression."""
        out = np.asarray(out, np.float64)
        if self.task in VALUE_TASKS:
            return out
        cut = 0.5 if self.probabilities else 0.0
        if self.task == "segmentation" and self.classes == 1:
            return (out[..., 0] >= cut).astype(np.int64)
        if self.independent:
            return (out >= cut).astype(np.int64).reshape(len(out), -1)
        return out.argmax(axis=-1)

    def targets(self, float_out: np.ndarray, labels: np.ndarray, alpha: float) -> np.ndarray:
        """``alpha`` x the float model's outputs (as probabilities) + (1 - alpha) x the labels in that form."""
        p = self.probs(float_out)
        if self.task == "embedding":  # identities are no vectors: the float model's embeddings are the targets
            return p.astype(np.float32)
        if self.task in VALUE_TASKS or self.independent:
            truth = np.asarray(labels, np.float64).reshape(p.shape)
        elif self.classes == 1:  # one-channel segmentation mask
            truth = np.asarray(labels, np.float64).reshape(p.shape)
        else:
            truth = np.eye(self.classes)[np.asarray(labels, np.int64)]
        return (alpha * p + (1.0 - alpha) * truth).astype(np.float32)

    def loss(self, keras):
        """The Keras loss for soft targets on this head (per task)."""
        if self.task == "embedding":
            return keras.losses.CosineSimilarity(axis=-1)
        if self.task in VALUE_TASKS:
            return keras.losses.MeanSquaredError()
        if self.independent or self.classes == 1:
            return keras.losses.BinaryCrossentropy(from_logits=not self.probabilities)
        return keras.losses.CategoricalCrossentropy(from_logits=not self.probabilities)

    def score(self, out: np.ndarray, labels: np.ndarray) -> float:
        """This head's task main metric of ``out`` against ``labels``, signed so that higher is better."""
        task = get_task(self.task)
        ctx = TaskContext(self.name, (self.name,), threshold=0.5 if self.probabilities else 0.0)
        acc = task.scores(ctx)
        acc.update(None, {self.name: np.asarray(out, np.float64)}, labels)
        value = acc.result()[task.main_metric]
        if value is None:
            return float("-inf")
        return float(value) if task.higher_is_better else -float(value)


def head_tasks(
    names: list[str],
    shapes: list[tuple],
    activations: dict[str, str],
    labels: list[np.ndarray],
    what: str = "Training data",
    unit_norm: frozenset = frozenset(),
) -> tuple[list[str], list[np.ndarray], list[str]]:
    """(task per output, labels checked and normalised by that task, label problems); ModelError for a task QAT
    cannot train. ``unit_norm``: the outputs whose float rows were measured to have unit L2 norm (embeddings)."""
    tasks, checked, problems = [], [], []
    for name, shape, y in zip(names, shapes, labels):
        y = np.asarray(y)
        task = _task_of(name, tuple(shape), activations.get(name, "unknown"), y, name in unit_norm)
        if task not in QAT_TASKS:
            raise ModelError(
                f"QAT trains {', '.join(QAT_TASKS)} heads; output "
                f"{name!r} {tuple(shape)} is a {task} output. Use --quant int8 (post-training, any "
                "outputs) or --quant auto instead."
            )
        try:
            checked.append(get_task(task).labels(y, {name: _dummy(shape, y)}, TaskContext(name, (name,)), Path(what)))
        except DataError as exc:
            problems.append(f"labels of output {name!r} ({task} output): {getattr(exc, 'detail', exc)}")
            checked.append(y)
        tasks.append(task)
    return tasks, checked, problems


def _task_of(name: str, shape: tuple, activation: str, labels: np.ndarray, unit_norm: bool) -> str:
    if is_box_output(name, shape):
        return "regression"
    k = shape[-1] if len(shape) >= 2 else 1
    if k == 1 and len(shape) == 2 and labels.size and np.all((labels == 0) | (labels == 1)):
        return "multilabel"  # one binary unit (a sigmoid or a logit) with 0/1 labels
    return infer_task({name: shape}, name, {name: activation}, labels, unit_norm).name


def _dummy(shape: tuple, labels: np.ndarray) -> np.ndarray:
    """A zero array of the output's per-sample shape (open spatial dims taken from the labels) for label checks."""
    dims = [d if d is not None else (labels.shape[i] if i < labels.ndim else 1) for i, d in enumerate(shape)][1:]
    return np.zeros((1, *dims), np.float32)


def detect_heads(names: list[str], outputs: list[np.ndarray], tasks: list[str] | None = None) -> tuple[Head, ...]:
    """A Head per output: probabilities when the float outputs on the training data look like them."""
    heads = []
    for i, (name, out) in enumerate(zip(names, outputs)):
        out = np.asarray(out, np.float64)
        k = out.shape[-1] if out.ndim >= 2 else 1
        task = tasks[i] if tasks else "classification"
        if k == 1 or task == "multilabel":
            probs = bool(out.size) and out.min() >= 0.0 and out.max() <= 1.0
        else:
            probs = bool(out.size) and out.min() >= -1e-6 and np.allclose(out.sum(axis=-1), 1.0, atol=1e-3)
        heads.append(Head(name, i, int(k), bool(probs), task))
    return tuple(heads)


def accuracy(heads: tuple[Head, ...], outputs: list[np.ndarray], labels: list[np.ndarray]) -> float:
    """Mean over heads of each head's task main metric (top-1 accuracy for classifiers)."""
    return float(np.mean([h.score(outputs[h.index], y) for h, y in zip(heads, labels)]))


def agreement(heads: tuple[Head, ...], outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """Mean over heads of decision agreement with the reference (float) outputs; embeddings: mean cosine; other
    value tasks: minus the mean absolute difference (higher is better)."""
    vals = []
    for h in heads:
        a, b = h.predict(outputs[h.index]), h.predict(reference[h.index])
        if h.task == "embedding":
            vals.append(float(np.mean(np.sum(normalised(a) * normalised(b), axis=1))))
        elif h.task in VALUE_TASKS:
            vals.append(-float(np.mean(np.abs(a - b))))
        else:
            vals.append(float(np.mean(a == b)))
    return float(np.mean(vals))
