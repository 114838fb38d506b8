"""The reference: the SavedModel's serving signature run with TensorFlow, in batches."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from calibration.spec import TensorSpec
from edge_tool.evaluate.latency import summarize, time_loop
from edge_tool.evaluate.report import LatencyStats

BATCH = 64


class ReferenceModel:
    """A loaded SavedModel ``serving_default``: its input specs, batched predict and a latency loop."""

    def __init__(self, path: Path):
        from edge_tool.modelio import load_serving_fn, saved_model_signature  # noqa: PLC0415

        self.path = Path(path)
        self.signature = saved_model_signature(self.path)  # ModelError without serving_default, before loading
        t0 = time.perf_counter_ns()
        self._loaded, self._fn, _ = load_serving_fn(self.path)
        self._load_ns = time.perf_counter_ns() - t0
        self._first_call_ns: int | None = None
        from edge_tool.env import import_tf  # noqa: PLC0415

        self._tf = import_tf()

    @property
    def input_specs(self) -> list[TensorSpec]:
        """Signature inputs as TensorSpecs (what --data must provide)."""
        return list(self.signature.inputs)

    @property
    def output_names(self) -> list[str]:
        """Signature output names, sorted."""
        return [t.name for t in self.signature.outputs]

    def _call(self, inputs: dict) -> dict:
        feeds = {s.name: self._tf.constant(np.asarray(inputs[s.name], dtype=s.dtype)) for s in self.input_specs}
        return {k: v.numpy() for k, v in self._fn(**feeds).items()}

    def predict(self, inputs: dict, batch: int = BATCH) -> dict[str, np.ndarray]:
        """Outputs by name for every sample of ``inputs`` (arrays batch-first)."""
        n = len(next(iter(inputs.values())))
        chunks: dict[str, list] = {}
        for start in range(0, n, batch):
            t0 = time.perf_counter_ns()
            out = self._call({k: v[start:start + batch] for k, v in inputs.items()})
            if self._first_call_ns is None:
                self._first_call_ns = time.perf_counter_ns() - t0
            for k, v in out.items():
                chunks.setdefault(k, []).append(v)
        return {k: np.concatenate(v) for k, v in chunks.items()}

    def latency(self, sample: dict, warmup: int, runs: int | None, time_budget_s: float | None) -> LatencyStats:
        """Batch-1 latency of the TensorFlow serving function (the reference row's p50/p99)."""
        one = {s.name: self._tf.constant(np.asarray(sample[s.name], dtype=s.dtype)) for s in self.input_specs}

        def step():
            return [v.numpy() for v in self._fn(**one).values()]

        cold = (self._load_ns + (self._first_call_ns or 0)) / 1e6
        return summarize(time_loop(step, warmup, runs, time_budget_s), cold)
