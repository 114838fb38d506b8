"""The streaming accuracy pass of ``edgetool eval``: each batch to every artefact and the reference, outputs checked
against the reference's and folded into running metrics (memory O(batch) whatever the data size)."""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.calibration.spec import show_shape
from edge_tool.device.spread import fold_batch
from edge_tool.errors import DataError, ModelError
from edge_tool.evaluate.data import EvalStream
from edge_tool.evaluate.runners import BatchFiles
from edge_tool.evaluate.task_pass import TaskMeasure, TaskSettings
from edge_tool.models.readers import Artifact


def primary_output(outputs: dict[str, np.ndarray]) -> str:
    """The output the metrics use: the first (by name) that looks like class scores, else the first."""
    names = sorted(outputs)
    for n in names:
        if outputs[n].ndim >= 2 and outputs[n].shape[-1] > 1:
            return n
    return names[0]


@dataclass
class Pass:
    """What the streaming pass leaves: the primary output's name, the first sample, the task measured, running
    metrics of the reference (``ref_scores``) and of every runner (``accs``)."""

    out_name: str
    sample: dict
    measure: TaskMeasure
    ref_scores: object
    accs: list
    labels: np.ndarray | None = None
    spreads: dict = field(default_factory=dict)  # runner index -> device.spread.Spread (--device rows)


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


def stream(ref, data: EvalStream, runners: list, settings: TaskSettings, scratch: Path) -> Pass:
    """Each batch: to every artefact's process, through the reference meanwhile, then every output folded in.

    The artefacts are told which reference outputs to return (the primary one, or every one for a task that
    needs them). When the signature's static shapes name them, every batch, the first included, runs in the
    reference and the artefacts at the same time; otherwise the first batch goes through the reference first,
    and its outputs name them (and the task). Runners that can hold two batches (LiteRT workers) get the next
    batch before the last one is collected, so no core waits while this process reads data or folds metrics; the
    reference's outputs wait beside them (memory O(2 batches)).
    """
    files = BatchFiles(scratch)
    depth = min((r.depth for r in runners), default=1)
    state: Pass | None = None
    guess = primary_from_specs(ref.signature.outputs)
    names = (settings.wanted_guess(guess, ref), sorted(s.name for s in ref.signature.outputs)) if guess else None
    waiting: deque = deque()  # (reference's wanted outputs, labels) of batches not yet collected
    pos = 0
    for number, (inputs, _) in enumerate(prefetched(data.batches())):
        reads = any(r.reads_files and not r.failed for r in runners)
        written = files.write(inputs, number % depth) if reads else {}
        if names is not None:
            for r in runners:
                r.submit(written, inputs, *names)
        ref_out = ref.predict(inputs)
        if state is None:
            state = _start(ref_out, inputs, data, settings, runners)
            wanted = (state.measure.wanted, sorted(ref_out))
            if names != wanted:  # not named by the specs (or named wrongly): ask now
                if names is not None:
                    for r in runners:
                        r.collect()
                names = wanted
                for r in runners:
                    r.submit(written, inputs, *names)
        n = len(next(iter(inputs.values())))
        labels = None if state.labels is None else state.labels[pos : pos + n]
        pos += n
        kept = {k: ref_out[k] for k in state.measure.wanted}
        state.measure.fold_reference(state.ref_scores, kept, labels)
        waiting.append((kept, labels))
        if len(waiting) >= depth:
            _fold(state, runners, ref, *waiting.popleft())
    if state is None:
        raise DataError(f"--data {data.path} yielded no samples.")
    while waiting:
        _fold(state, runners, ref, *waiting.popleft())
    return state


def _start(ref_out: dict, inputs: dict, data: EvalStream, settings: TaskSettings, runners: list) -> Pass:
    """After the first reference batch: the primary output, the task (given or inferred), the labels checked by
    that task, and fresh accumulators."""
    name = primary_output(ref_out)
    measure = settings.resolve(ref_out, name, data.labels, data.path, inputs)
    return Pass(
        name,
        {k: v[:1].copy() for k, v in inputs.items()},
        measure,
        measure.reference_scores(),
        [measure.runner_accumulators() for _ in runners],
        measure.labels,
    )


def prefetched(batches: Iterator, ahead: int = 1) -> Iterator:
    """``batches``, read ``ahead`` items in advance by a thread: the next batch is loaded, cast and summarised
    (numpy releases the GIL for that) while TensorFlow runs the current one. An error in the reader is raised
    here, at the batch where it happened; leaving the loop early stops the reader."""
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
        except BaseException as exc:
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


def _fold(state: Pass, runners: list, ref, ref_y: dict, labels: np.ndarray | None) -> None:
    """Collect the oldest batch from every runner and fold it into that runner's metrics (and a device row's
    outputs against its host row's: ``spreads``)."""
    outs = []
    for runner, acc in zip(runners, state.accs):
        out = runner.collect()
        outs.append(out)
        if out is not None:
            for name, y in out.items():
                _check_output_shape(runner.art, y, ref_y[name], name, ref)
            bad = next((b for name, y in out.items() if (b := non_finite(y, ref_y[name], name)) is not None), None)
            if bad is not None:
                runner.reject(bad)
                outs[-1] = None
                continue
            state.measure.fold(acc, ref_y, out, labels)
    fold_batch(state.spreads, runners, outs, state.out_name)


def non_finite(out: np.ndarray, ref_y: np.ndarray, out_name: str) -> str | None:
    """Why ``out`` is unusable when it holds NaN/Inf where the reference's output is finite, else None."""
    bad = ~np.isfinite(out) & np.isfinite(ref_y)  # integer outputs are always finite
    if not bad.any():
        return None
    return (
        f"gives non-finite outputs (NaN/Inf in {int(bad.sum())} of {bad.size} values of '{out_name}') where "
        "the reference's are finite: a kernel of this runtime fails on the model (or the artefact overflows)"
    )


def _check_output_shape(art: Artifact, out: np.ndarray, ref_y: np.ndarray, out_name: str, ref) -> None:
    if out.shape[1:] != ref_y.shape[1:]:
        raise ModelError(
            f"{art.given} gives output {out_name!r} of shape {show_shape((None, *out.shape[1:]))}, but "
            f"the reference {ref.path} gives {show_shape((None, *ref_y.shape[1:]))} (e.g. a different "
            "number of classes): it was not converted from this reference model."
        )
