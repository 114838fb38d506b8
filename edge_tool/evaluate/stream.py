"""The streaming accuracy pass of ``edgetool eval``: each batch to every artefact and the reference, outputs checked
against the reference's and folded into running metrics (memory O(batch) whatever the data size)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.types import show_shape
from edge_tool.errors import DataError, ModelError
from edge_tool.evaluate import metrics
from edge_tool.evaluate.artifacts import Artifact
from edge_tool.evaluate.data import EvalStream


def primary_output(outputs: dict[str, np.ndarray]) -> str:
    """The output the metrics use: the first (by name) that looks like class scores, else the first."""
    names = sorted(outputs)
    for n in names:
        if outputs[n].ndim >= 2 and outputs[n].shape[-1] > 1:
            return n
    return names[0]


@dataclass
class Pass:
    """What the streaming pass leaves: the primary output's name, the first sample, running metrics."""

    out_name: str
    sample: dict
    ref_task: metrics.TaskAccumulator
    accs: list


def stream(ref, data: EvalStream, runners: list, top_k: int, scratch: Path) -> Pass:
    """Each batch: to every artefact's process, through the reference meanwhile, then every output folded in.

    The first batch goes through the reference first (its outputs name the primary output the artefacts send
    back); from the second on, the reference and every artefact work on the batch at the same time.
    """
    from edge_tool.evaluate.runners import BatchFiles  # noqa: PLC0415

    files = BatchFiles(scratch)
    accs = [metrics.DriftAccumulator(top_k) for _ in runners]
    state: Pass | None = None
    ref_names: list[str] = []
    for inputs, labels in data.batches():
        written = files.write(inputs) if any(r.reads_files and not r.failed for r in runners) else {}
        if state is None:
            ref_out = ref.predict(inputs)
            state = Pass(primary_output(ref_out), {k: v[:1].copy() for k, v in inputs.items()},
                         metrics.TaskAccumulator(top_k), accs)
            ref_names = sorted(ref_out)
            check_labels(data.labels, ref_out[state.out_name], state.out_name, data.path)
            for r in runners:
                r.submit(written, inputs, state.out_name, ref_names)
        else:
            for r in runners:
                r.submit(written, inputs, state.out_name, ref_names)
            ref_out = ref.predict(inputs)
        ref_y = ref_out[state.out_name]
        state.ref_task.update(ref_y, labels)
        for runner, acc in zip(runners, accs):
            out = runner.collect()
            if out is not None:
                _check_output_shape(runner.art, out, ref_y, state.out_name, ref)
                if (bad := non_finite(out, ref_y, state.out_name)) is not None:
                    runner.reject(bad)
                    continue
                acc.update(ref_y, out, labels)
    if state is None:
        raise DataError(f"--data {data.path} yielded no samples.")
    return state


def non_finite(out: np.ndarray, ref_y: np.ndarray, out_name: str) -> str | None:
    """Why ``out`` is unusable when it holds NaN/Inf where the reference's output is finite, else None."""
    bad = ~np.isfinite(out) & np.isfinite(ref_y)  # integer outputs are always finite
    if not bad.any():
        return None
    return (f"gives non-finite outputs (NaN/Inf in {int(bad.sum())} of {bad.size} values of '{out_name}') where "
            "the reference's are finite: a kernel of this runtime fails on the model (or the artefact overflows)")


def check_labels(labels: np.ndarray | None, ref_y: np.ndarray, out_name: str, data_path: Path) -> None:
    """DataError unless every label is a class index of the reference's scored output (0 .. classes-1).

    Labels outside that range would score 0 % silently (and let a --max-drop gate pass on a broken model).
    """
    if labels is None or not len(labels):
        return
    classes = metrics.num_classes(ref_y)
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= classes:
        outside = int(np.count_nonzero((labels < 0) | (labels >= classes)))
        raise DataError(f"--data {data_path}: labels range {lo}..{hi} ({outside} of {len(labels)} outside 0.."
                        f"{classes - 1}), but the reference's output {out_name!r} has {classes} class"
                        f"{'es' if classes != 1 else ''} per sample; labels must be class indices 0..{classes - 1}.")


def _check_output_shape(art: Artifact, out: np.ndarray, ref_y: np.ndarray, out_name: str, ref) -> None:
    if out.shape[1:] != ref_y.shape[1:]:
        raise ModelError(f"{art.given} gives output {out_name!r} of shape {show_shape((None, *out.shape[1:]))}, but "
                         f"the reference {ref.path} gives {show_shape((None, *ref_y.shape[1:]))} (e.g. a different "
                         "number of classes): it was not converted from this reference model.")
