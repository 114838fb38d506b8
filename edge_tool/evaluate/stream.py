"""The streaming accuracy pass of ``edgetool eval``: each batch to every artefact and the reference, outputs checked
against the reference's and folded into running metrics (memory O(batch) whatever the data size)."""

from __future__ import annotations

from collections.abc import Iterator
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


def primary_from_specs(specs) -> str | None:
    """What ``primary_output`` will choose, read off the signature's output specs before anything ran; None when
    a shape that choice depends on is not static."""
    ordered = sorted(specs, key=lambda s: s.name)
    for spec in ordered:
        if spec.shape is None:
            return None
        if len(spec.shape) >= 2:
            if spec.shape[-1] is None:
                return None
            if spec.shape[-1] > 1:
                return spec.name
    return ordered[0].name if ordered else None


def stream(ref, data: EvalStream, runners: list, top_k: int, scratch: Path) -> Pass:
    """Each batch: to every artefact's process, through the reference meanwhile, then every output folded in.

    The artefacts are told which reference output to return (the primary one). When the signature's static
    shapes name it, every batch, the first included, runs in the reference and the artefacts at the same time;
    otherwise the first batch goes through the reference first, and its outputs name it. Runners that can hold
    two batches (LiteRT workers) get the next batch before the last one is collected, so no core waits while
    this process reads data or folds metrics; the reference's outputs wait beside them (memory O(2 batches)).
    """
    from collections import deque  # noqa: PLC0415

    from edge_tool.evaluate.runners import BatchFiles  # noqa: PLC0415

    files = BatchFiles(scratch)
    depth = min((r.depth for r in runners), default=1)
    state: Pass | None = None
    guess = primary_from_specs(ref.signature.outputs)
    names = (guess, sorted(s.name for s in ref.signature.outputs)) if guess else None
    waiting: deque = deque()  # (reference's primary output, labels) of batches not yet collected
    for number, (inputs, labels) in enumerate(prefetched(data.batches())):
        reads = any(r.reads_files and not r.failed for r in runners)
        written = files.write(inputs, number % depth) if reads else {}
        if names is not None:
            for r in runners:
                r.submit(written, inputs, *names)
        ref_out = ref.predict(inputs)
        if state is None:
            state = Pass(primary_output(ref_out), {k: v[:1].copy() for k, v in inputs.items()},
                         metrics.TaskAccumulator(top_k), [metrics.DriftAccumulator(top_k) for _ in runners])
            check_labels(data.labels, ref_out[state.out_name], state.out_name, data.path)
            if names != (state.out_name, sorted(ref_out)):  # not named by the specs (or named wrongly): ask now
                if names is not None:
                    for r in runners:
                        r.collect()
                names = (state.out_name, sorted(ref_out))
                for r in runners:
                    r.submit(written, inputs, *names)
        state.ref_task.update(ref_out[state.out_name], labels)
        waiting.append((ref_out[state.out_name], labels))
        if len(waiting) >= depth:
            _fold(state, runners, ref, *waiting.popleft())
    if state is None:
        raise DataError(f"--data {data.path} yielded no samples.")
    while waiting:
        _fold(state, runners, ref, *waiting.popleft())
    return state


def prefetched(batches: Iterator, ahead: int = 1) -> Iterator:
    """``batches``, read ``ahead`` items in advance by a thread: the next batch is loaded, cast and summarised
    (numpy releases the GIL for that) while TensorFlow runs the current one. An error in the reader is raised
    here, at the batch where it happened; leaving the loop early stops the reader."""
    import queue  # noqa: PLC0415
    import threading  # noqa: PLC0415

    items: queue.Queue = queue.Queue(maxsize=ahead)
    stop = threading.Event()
    end = object()

    def offer(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in batches:
                if not offer((item, None)):
                    return
            offer((end, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            offer((end, exc))

    reader = threading.Thread(target=read, name="edgetool-eval-reader", daemon=True)
    reader.start()
    try:
        while True:
            item, exc = items.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        stop.set()
        reader.join()


def _fold(state: Pass, runners: list, ref, ref_y: np.ndarray, labels: np.ndarray | None) -> None:
    """Collect the oldest batch from every runner and fold it into that runner's metrics."""
    for runner, acc in zip(runners, state.accs):
        out = runner.collect()
        if out is not None:
            _check_output_shape(runner.art, out, ref_y, state.out_name, ref)
            if (bad := non_finite(out, ref_y, state.out_name)) is not None:
                runner.reject(bad)
                continue
            acc.update(ref_y, out, labels)


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
