"""A float .tflite as eval's reference (``eval --reference model.tflite``): the file ``convert model.tflite``
quantized, run in this process by LiteRT with the same bindings, batching and (de)quantization as an artefact's
worker (``litert.tflite_runner``), so each row's drift is the quantizer's alone. ``open_reference`` picks it or the
SavedModel reference by the path."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from edge_tool.calibration.spec import TensorSpec
from edge_tool.errors import UsageError
from edge_tool.evaluate.artifacts import saved_model_size
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.reference import ReferenceModel
from edge_tool.evaluate.rows import LatencyStats
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.litert.timing import time_loop
from edge_tool.models.signatures import tflite_signature, validate_saved_model_dir
from edge_tool.parsers.limits import check_tflite_file


def is_tflite_reference(path: Path) -> bool:
    """True for a .tflite file given as --reference."""
    return Path(path).suffix.lower() == ".tflite" and Path(path).is_file()


class TfliteReference:
    """A float .tflite run as the reference: ``ReferenceModel``'s face (signature, input specs, predict, latency)."""

    def __init__(self, path: Path, threads: int | None = None, signature: str | None = None):
        self.path = Path(path)
        self.signature = tflite_signature(self.path)  # the signature LiteRT runs for every artefact too
        if signature is not None and signature != self.signature.key:
            raise UsageError(
                f"--signature {signature}: eval runs the .tflite reference's signature {self.signature.key!r}, the "
                "one each .tflite artefact is run by; drop --signature."
            )
        t0 = time.perf_counter_ns()
        self.threads = threads
        self._model = TfliteInterpreter(self.path, threads or 1)
        self._load_ns = time.perf_counter_ns() - t0
        self._first_call_ns: int | None = None

    @property
    def input_specs(self) -> list[TensorSpec]:
        """Signature inputs as TensorSpecs (what --data must provide)."""
        return list(self.signature.inputs)

    @property
    def output_names(self) -> list[str]:
        """Signature output names, sorted."""
        return [t.name for t in self.signature.outputs]

    fixed_batch = None  # the interpreter batches as the file allows

    def predict(self, inputs: dict, batch: int = 0) -> dict[str, np.ndarray]:
        """Outputs by signature name for every sample of ``inputs`` (dequantized, float64)."""
        t0 = time.perf_counter_ns()
        raw = self._model.predict(self._model.prepare(inputs))
        if self._first_call_ns is None:
            self._first_call_ns = time.perf_counter_ns() - t0
        return {b.name: self._model.dequantize(b, raw[b.index]) for b in self._model.outputs}

    def latency(
        self, sample: dict, warmup: int, runs: int | None, time_budget_s: float | None, threads: int | None = None
    ) -> LatencyStats:
        """Batch-1 latency of the file on ``threads`` threads (re-opened if the pass used another count)."""
        if threads is not None and threads != (self.threads or 1):
            self._model, self.threads = TfliteInterpreter(self.path, threads), threads
        feeds = self._model.prepare({k: np.asarray(v)[:1] for k, v in sample.items()})
        model = self._model

        def step():
            return model.predict(feeds)

        cold = (self._load_ns + (self._first_call_ns or 0)) / 1e6
        return summarize(time_loop(step, warmup, runs, time_budget_s), cold)


def validate_reference(path: Path) -> None:
    """ModelError unless ``path`` is a SavedModel directory or a readable .tflite file."""
    if Path(path).suffix.lower() == ".tflite" and not Path(path).is_dir():
        check_tflite_file(path)
    else:
        validate_saved_model_dir(path)


def open_reference(path: Path, threads: int | None, trust_model_code: bool, signature: str | None):
    """The reference model at ``path``: a float .tflite (``TfliteReference``) or a SavedModel (``ReferenceModel``)."""
    if is_tflite_reference(path):
        return TfliteReference(path, threads, signature)
    return ReferenceModel(path, threads, trust_model_code, signature)


def reference_size(path: Path) -> int:
    """Bytes of the reference: the .tflite file, or the SavedModel proper."""
    return Path(path).stat().st_size if is_tflite_reference(path) else saved_model_size(path)


def reference_runtime(path: Path) -> str:
    """How the reference row was run, for the report."""
    return (
        "ai_edge_litert (float .tflite, batch 1)" if is_tflite_reference(path) else "tensorflow (SavedModel, batch 1)"
    )
