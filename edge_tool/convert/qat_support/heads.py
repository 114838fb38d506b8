"""The classifier heads QAT fine-tunes: what each output is, its distillation targets, loss and accuracy.

An output of shape (n, k) with k >= 2 is a k-class head (softmax probabilities or logits); (n, 1) is a
binary head (a sigmoid probability or a logit). Which one is decided from the float model's own outputs on
the training data (non-negative rows summing to 1 are probabilities), so TF-op softmaxes count too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge_tool.errors import ModelError, collect_and_raise


@dataclass(frozen=True)
class Head:
    """One model output treated as a classifier."""

    name: str
    index: int          # position among the model's outputs
    classes: int        # k for a k-class head, 1 for a binary (sigmoid) head
    probabilities: bool  # outputs are probabilities (softmax / sigmoid) rather than logits

    def probs(self, out: np.ndarray) -> np.ndarray:
        """Outputs as probabilities, shape (n, classes)."""
        out = np.asarray(out, np.float64)
        if self.probabilities:
            return out
        if self.classes == 1:
            return 1.0 / (1.0 + np.exp(-out))
        e = np.exp(out - out.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, out: np.ndarray) -> np.ndarray:
        """Predicted class ids, shape (n,)."""
        out = np.asarray(out, np.float64)
        if self.classes == 1:
            return (out[:, 0] > (0.5 if self.probabilities else 0.0)).astype(np.int64)
        return out.argmax(axis=1)

    def targets(self, float_out: np.ndarray, labels: np.ndarray, alpha: float) -> np.ndarray:
        """``alpha`` x the float model's probabilities + (1 - alpha) x the one-hot labels (float32)."""
        p = self.probs(float_out)
        onehot = labels.reshape(-1, 1).astype(np.float64) if self.classes == 1 else np.eye(self.classes)[labels]
        return (alpha * p + (1.0 - alpha) * onehot).astype(np.float32)

    def loss(self, keras):
        """The Keras loss for soft targets on this head."""
        if self.classes == 1:
            return keras.losses.BinaryCrossentropy(from_logits=not self.probabilities)
        return keras.losses.CategoricalCrossentropy(from_logits=not self.probabilities)


def output_classes(names: list[str], shapes: list[tuple]) -> list[int]:
    """Classes per output from the static output shapes; ModelError for outputs that are not (n, classes)."""
    problems = [f"output {n!r} has shape {tuple(s)}" for n, s in zip(names, shapes)
                if len(s) != 2 or s[-1] is None]
    collect_and_raise(problems, ModelError,
                      "QAT fine-tunes classifiers (it distils class probabilities, shape (n, classes)), but this "
                      "model has other outputs; use --quant int8 (post-training, any outputs) instead:")
    return [int(s[-1]) for s in shapes]


def detect_heads(names: list[str], outputs: list[np.ndarray]) -> tuple[Head, ...]:
    """A Head per (n, k) output: probabilities when the float outputs on the training data look like them."""
    heads = []
    for i, (name, out) in enumerate(zip(names, outputs)):
        out = np.asarray(out, np.float64)
        k = out.shape[1]
        if k == 1:
            probs = bool(out.size) and out.min() >= 0.0 and out.max() <= 1.0
        else:
            probs = bool(out.size) and out.min() >= -1e-6 and np.allclose(out.sum(axis=1), 1.0, atol=1e-3)
        heads.append(Head(name, i, k, bool(probs)))
    return tuple(heads)


def label_problems(names: list[str], classes: list[int], labels: list[np.ndarray]) -> tuple[list[str], list]:
    """(problems, labels as int64 class ids) for each output's labels against its class count."""
    problems, out = [], []
    for name, k, y in zip(names, classes, labels):
        y = np.asarray(y)
        top = max(k, 2) - 1
        ok = y.ndim == 1 and (y.dtype.kind in "iub" or (y.dtype.kind == "f" and bool(np.all(y == np.round(y)))))
        if ok and y.size and (y.min() < 0 or y.max() > top):
            ok = False
        if not ok:
            rng = f", range {y.min()}..{y.max()}" if y.size and y.ndim == 1 and y.dtype.kind in "iufb" else ""
            problems.append(f"labels for output {name!r} must be class ids 0..{top} with shape (n,); got "
                            f"dtype {y.dtype}, shape {y.shape}{rng}")
        out.append(y.astype(np.int64) if ok else y)
    return problems, out


def accuracy(heads: tuple[Head, ...], outputs: list[np.ndarray], labels: list[np.ndarray]) -> float:
    """Mean over heads of top-1 accuracy."""
    return float(np.mean([np.mean(h.predict(outputs[h.index]) == y) for h, y in zip(heads, labels)]))


def agreement(heads: tuple[Head, ...], outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """Mean over heads of top-1 agreement with the reference (float) outputs."""
    return float(np.mean([np.mean(h.predict(outputs[h.index]) == h.predict(reference[h.index])) for h in heads]))
