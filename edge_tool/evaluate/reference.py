"""The reference: the SavedModel's serving signature run with TensorFlow, in batches, on a given thread count."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.env import import_tf
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.rows import LatencyStats
from edge_tool.litert.timing import time_loop
from edge_tool.models.signatures import SERVING, saved_model_signature, signature_runner

BATCH = 64


class ReferenceModel:
    """A loaded SavedModel ``serving_default``: its input specs, batched predict and a latency loop.

    The signature's graph runs in a TF1 session whose thread pools have ``threads`` threads (intra- and inter-op;
    None: TensorFlow's default, every core), so eval can give the reference the cores its artefact workers leave
    free during the pass, and time it at ``--threads`` afterwards; it also loads faster than
    ``tf.saved_model.load``, which revives every Keras layer. A SavedModel the TF1 loader refuses is loaded the
    TF2 way, on TensorFlow's process-wide thread pools.
    """

    def __init__(
        self, path: Path, threads: int | None = None, trust_model_code: bool = False, signature: str | None = None
    ):
        self.path = Path(path)
        # ModelError without the signature (serving_default unless ``signature``), before loading
        self.signature = saved_model_signature(self.path, signature or SERVING)
        self._trust = trust_model_code
        self._tf = import_tf()
        t0 = time.perf_counter_ns()
        self._run, self.threads = self._open(threads)
        self._load_ns = time.perf_counter_ns() - t0
        self._first_call_ns: int | None = None

    def _open(self, threads: int | None) -> tuple[Callable[[dict], dict], int | None]:
        """(feeds by name -> outputs by name, the thread count it runs on; None when TensorFlow's default)."""
        return signature_runner(self._tf, self.path, self.signature.key, threads, trust_model_code=self._trust)

    @property
    def input_specs(self) -> list[TensorSpec]:
        """Signature inputs as TensorSpecs (what --data must provide)."""
        return list(self.signature.inputs)

    @property
    def output_names(self) -> list[str]:
        """Signature output names, sorted."""
        return [t.name for t in self.signature.outputs]

    def _feed(self, inputs: dict) -> dict:
        return {  # text stays as it is (TensorFlow takes str/bytes arrays for a string input)
            s.name: np.asarray(inputs[s.name], dtype=None if s.dtype == "string" else s.dtype) for s in self.input_specs
        }

    @property
    def fixed_batch(self) -> int | None:
        """The batch every input of the signature is fixed to (a graph traced at batch 1, say), else None."""
        firsts = {s.shape[0] if s.shape else None for s in self.input_specs}
        return firsts.pop() if len(firsts) == 1 and None not in firsts else None

    def predict(self, inputs: dict, batch: int = BATCH) -> dict[str, np.ndarray]:
        """Outputs by name for every sample of ``inputs`` (arrays batch-first), in chunks of the signature's
        fixed batch when it has one (the last chunk padded with its last sample, the padding's outputs dropped)."""
        n = len(next(iter(inputs.values())))
        batch = self.fixed_batch or batch
        chunks: dict[str, list] = {}
        for start in range(0, n, batch):
            part = {k: v[start : start + batch] for k, v in inputs.items()}
            m = len(next(iter(part.values())))
            if self.fixed_batch and m < batch:
                part = {k: np.concatenate([v, np.repeat(v[-1:], batch - m, axis=0)]) for k, v in part.items()}
            t0 = time.perf_counter_ns()
            out = self._run(self._feed(part))
            if self._first_call_ns is None:
                self._first_call_ns = time.perf_counter_ns() - t0
            for k, v in out.items():
                chunks.setdefault(k, []).append(np.asarray(v)[:m])
        return {k: np.concatenate(v) for k, v in chunks.items()}

    def latency(
        self, sample: dict, warmup: int, runs: int | None, time_budget_s: float | None, threads: int | None = None
    ) -> LatencyStats:
        """Batch-1 latency of the serving signature (the reference row's p50/p99), on ``threads`` threads when the
        model runs in a session (re-opened if the pass used another count)."""
        if threads is not None and self.threads is not None and threads != self.threads:
            self._run, self.threads = None, None  # free the pass's session before loading another
            self._run, self.threads = self._open(threads)
        one = self._feed(sample)
        run = self._run

        def step():
            return list(run(one).values())

        cold = (self._load_ns + (self._first_call_ns or 0)) / 1e6
        return summarize(time_loop(step, warmup, runs, time_budget_s), cold)
