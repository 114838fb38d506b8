"""What a mode builder gets: the converter factory, calibration data, I/O dtype and error translation."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.convert.config import ConvertConfig, IOType
from edge_tool.convert.converter import SharedSource, checks_loops_itself, new_converter, refuse_unsafe_loops
from edge_tool.convert.diagnose import describe_failure, python_callback_refusal, python_callbacks
from edge_tool.convert.source import PreparedSource
from edge_tool.errors import ConversionError, DataError
from edge_tool.modelio import signature_runner


def flex_ops_from_error(message: str) -> list[str]:
    """Op names the converter says need TF Select (Flex) kernels."""
    found = re.findall(r"TF Select ops: ([^\n]+)", message)
    names = {n.strip() for line in found for n in line.split(",") if n.strip()}
    names |= set(re.findall(r"'tf\.(\w+)' op is neither a custom op nor a flex op", message))
    return sorted(names)


def converter_rejected(exc: BaseException) -> bool:
    """True when ``exc`` is the converter refusing the model, not a bug in edgetool's use of it.

    That is TensorFlow's ``ConverterError``, or a ValueError/RuntimeError raised inside TensorFlow's own code (its
    argument checks and the calibrator). A TypeError or AttributeError at edgetool's call site — what a changed
    private API gives — is not: it surfaces as an internal error instead of blaming the user's model.
    """
    from tensorflow.lite.python.convert_phase import ConverterError  # noqa: PLC0415

    if isinstance(exc, ConverterError):
        return True
    if not isinstance(exc, (ValueError, RuntimeError)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{os.sep}tensorflow{os.sep}" in tb.tb_frame.f_code.co_filename



class OpsNotBuiltin(ConversionError):
    """The converter left ops it could not express as TFLite builtins (Flex-only ops, or builtin ops it could not
    legalize at the traced shapes: a fixed batch may fix the latter, ``batch_retry``)."""

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
    _float_model: bytes | None = field(default=None, repr=False)
    _reference: object | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.shared is None:
            self.shared = SharedSource(Path(self.source.saved_model), self.source.signature.key)

    @property
    def io_dtype(self):
        """tf dtype for inference I/O, or None to keep the model's own."""
        return {IOType.MODEL: None, IOType.FLOAT32: None, IOType.INT8: self.tf.int8,
                IOType.UINT8: self.tf.uint8}[self.config.io_type]

    def new_converter(self):
        """A fresh TFLiteConverter on the prepared SavedModel's serving signature.

        It behaves like ``tf.lite.TFLiteConverter.from_saved_model`` (same flags, same flatbuffer) but shares
        the SavedModel's GraphDef and the calibration statistics with the other modes of this run.
        """
        return new_converter(self.shared)

    def convert(self, configure: Callable, converter=None) -> bytes:
        """Configure a converter, apply --allow-select-tf-ops, run it; ConverterError → ConversionError."""
        conv = converter or self.new_converter()
        configure(conv)
        if conv.representative_dataset is not None and not checks_loops_itself(conv):
            self._refuse_unsafe_loops(conv)  # the public converter would segfault calibrating a WHILE loop
        if self.config.allow_select_tf_ops:
            ops = set(conv.target_spec.supported_ops or {self.tf.lite.OpsSet.TFLITE_BUILTINS})
            conv.target_spec.supported_ops = ops | {self.tf.lite.OpsSet.SELECT_TF_OPS}
        try:
            with warnings.catch_warnings():
                # the calibrator matches by-name samples through tf.lite.Interpreter, which warns of its deprecation
                warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
                return conv.convert()
        except ConversionError:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised below unless the converter itself rejected the model
            if not converter_rejected(exc):
                raise
            raise self._conversion_error(exc) from None

    def reference_outputs(self, feeds: list[dict]) -> list[dict]:
        """The prepared SavedModel's serving outputs (``{name: array}``) for each feed; the model loads once.

        The signature's graph is run in a TF1 session (MobileNetV2: 1.2 s to load and run against 3.1 s for
        ``tf.saved_model.load``, which revives every Keras layer); a SavedModel that loader refuses is loaded
        the TF2 way."""
        if self._reference is None:
            self._reference, _ = signature_runner(self.tf, self.source.saved_model, self.source.signature.key,
                                                  trust_model_code=self.config.trust_model_code)
        return [self._reference(feed) for feed in feeds]

    def _refuse_unsafe_loops(self, conv) -> None:
        """On the public converter path: refuse calibrating a WHILE loop (it segfaults TF 2.19) before trying."""
        if self._float_model is None:
            self._float_model = self.convert(lambda c: None)
        int16 = self.tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        refuse_unsafe_loops(self._float_model, self.tf.int16 if int16 in conv.target_spec.supported_ops else None)

    def _conversion_error(self, exc: Exception) -> ConversionError:
        callbacks = python_callbacks(self.source.saved_model)  # first: no option below could help with these
        if callbacks:
            return ConversionError(python_callback_refusal(self.source.original, callbacks))
        message = str(exc)
        flex = flex_ops_from_error(message)
        if flex and not self.config.allow_select_tf_ops:
            return OpsNotBuiltin(
                f"{self.source.original} uses ops the TFLite builtin op set cannot express: {', '.join(flex)}. "
                "Replace them in the model, or pass --allow-select-tf-ops to embed TF (Flex) kernels — the app then "
                "needs the Flex delegate (larger binary)."
            )
        retrace = (self.source.fixed_batch or {}).get("method")
        detail = describe_failure(message, self.config.batch, self.config.allow_select_tf_ops, retrace)
        return ConversionError(f"The TFLite converter failed on {self.source.original}: {detail}")

    def train_data(self):
        """(x, y) from --train-data, matched to the model input."""
        import calibration  # noqa: PLC0415

        specs = calibration.specs_from(self.source.signature.inputs)
        if len(specs) != 1:
            raise DataError(f"--train-data supports single-input models; this one has {len(specs)} inputs.")
        ds = calibration.load(self.config.train_data, specs,
                              calibration.LoadOptions(samples=None, seed=self.config.seed, require_labels=True))
        return ds.inputs[specs[0].name], ds.labels

    def record_notes(self, mode, notes: dict) -> None:
        """Keep what ``mode``'s builder decided; ``convert`` puts it into that artefact's manifest record."""
        self.notes[getattr(mode, "value", mode)] = notes

    def keras_source(self) -> Path:
        """Path of the Keras model for QAT (the original file/dir; QAT validates its flavour)."""
        return self.source.original
