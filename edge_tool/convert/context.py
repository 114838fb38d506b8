"""What a mode builder gets: the converter factory, calibration data, I/O dtype and error translation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool import calibration
from edge_tool.convert.config import ConvertConfig, IOType
from edge_tool.convert.source import PreparedSource
from edge_tool.errors import DataError
from edge_tool.models.signatures import signature_runner
from edge_tool.tflite_converter.fast_path import SharedSource
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter


@dataclass
class BuildContext:
    """Shared state for building every requested mode from one source."""

    tf: object
    config: ConvertConfig
    source: PreparedSource
    representative_dataset: Callable | None = None
    epoch_progress: Callable | None = None
    metadata: object | None = None  # MetadataSpec embedded in every .tflite (None: --no-metadata)
    contracts: tuple = ()  # the input contract (calibration.contract.ImageContract per image input)
    shared: SharedSource | None = field(default=None, repr=False)
    notes: dict = field(default_factory=dict)  # mode value -> what its builder decided (goes into the manifest)
    _reference: object | None = field(default=None, repr=False)
    retry: object | None = field(default=None, repr=False)  # BatchRetry, for builders that convert twice (QAT)
    qat_trained: int = 0  # FakeQuant ops in the source (trained quantization-aware): int8 uses their ranges

    def __post_init__(self) -> None:
        if self.shared is None:
            self.shared = SharedSource(Path(self.source.saved_model), self.source.signature.key)

    @property
    def io_dtype(self):
        """tf dtype for inference I/O, or None to keep the model's own."""
        return {IOType.MODEL: None, IOType.FLOAT32: None, IOType.INT8: self.tf.int8, IOType.UINT8: self.tf.uint8}[
            self.config.io_type
        ]

    def new_converter(self):
        """A fresh TFLiteConverter on the prepared SavedModel's serving signature (``converter.run.new_converter``).

        It behaves like ``tf.lite.TFLiteConverter.from_saved_model`` (same flags, same flatbuffer) but shares
        the SavedModel's GraphDef and the calibration statistics with the other modes of this run.
        """
        return new_converter(self.shared, allow_select_tf_ops=self.config.allow_select_tf_ops)

    def convert(self, configure: Callable, converter=None) -> bytes:
        """Configure a converter and run it (``run_converter``: --allow-select-tf-ops, the WHILE-loop guard, the
        converter's refusal as ConversionError naming this model and convert's options)."""
        conv = converter or self.new_converter()
        configure(conv)
        return run_converter(conv, self.refusal())

    def refusal(self) -> Refusal:
        """How a failed conversion of this source is worded (convert's options may be suggested)."""
        original = self.source.original
        return Refusal(
            original,
            f"The TFLite converter failed on {original}",
            hints=True,
            batch=self.config.batch,
            retrace=self.source.fixed_batch.method if self.source.fixed_batch else None,
        )

    def reference_outputs(self, feeds: list[dict]) -> list[dict]:
        """The prepared SavedModel's serving outputs (``{name: array}``) for each feed; the model loads once.

        The signature's graph is run in a TF1 session (it loads faster than ``tf.saved_model.load``, which
        revives every Keras layer; docs/performance.md, "Defaults"); a SavedModel that loader refuses is loaded
        the TF2 way."""
        if self._reference is None:
            self._reference, _ = signature_runner(
                self.tf,
                self.source.saved_model,
                self.source.signature.key,
                trust_model_code=self.config.trust_model_code,
            )
        return [self._reference(feed) for feed in feeds]

    def stream_outputs(self, feeds: list[dict]) -> list[dict]:
        """The outputs of ``feeds`` run in order, as one stream, by a freshly loaded SavedModel (a model with
        state starts from its saved initial state; the cached runner of ``reference_outputs`` is not touched)."""
        run, _ = signature_runner(
            self.tf, self.source.saved_model, self.source.signature.key, trust_model_code=self.config.trust_model_code
        )
        return [run(feed) for feed in feeds]

    def train_data(self):
        """(x, y) from --train-data, matched to the model input."""
        specs = calibration.specs_from(self.source.signature.inputs)
        if len(specs) != 1:
            raise DataError(f"--train-data supports single-input models; this one has {len(specs)} inputs.")
        ds = calibration.load(
            self.config.train_data,
            specs,
            calibration.LoadOptions(samples=None, seed=self.config.seed, require_labels=True),
        )
        return ds.inputs[specs[0].name], ds.labels

    def record_notes(self, mode, notes) -> None:
        """Keep what ``mode``'s builder decided (the value of the manifest entry's field named after the mode: a
        dict for qat, an ``Int16x8Note``); the tflite format puts it into that artefact's entry."""
        self.notes[getattr(mode, "value", mode)] = notes

    def keras_source(self) -> Path:
        """Path of the Keras model for QAT (the original file/dir; QAT validates its flavour)."""
        return self.source.original
