"""A TFLiteConverter that shares per-source work across the modes of one ``convert`` run.

``tf.lite.TFLiteConverter.from_saved_model(...).convert()`` spends most of its time outside the MLIR
conversion: ``from_saved_model`` runs ``tf.saved_model.load`` only to check the signature key, ``convert()``
loads the SavedModel twice more (a GraphDef for its checks, and a full ``tf.saved_model.load`` whose debug
info the SavedModel import path then does not use), and every calibrated mode feeds the representative
dataset through its own calibration interpreter. For a run of five modes that is ten full loads and two
calibrations of the same model.

``SharedSource`` holds what is the same for every mode of one run — the signature-checked SavedModel, its
GraphDef (read once, as stored: the base class imports it into a ``tf.Graph`` only to find signature tensors that
the SavedModel importer path never uses), and the calibration results keyed by the float model they were made on — and
``make_converter`` returns a ``TFLiteSavedModelConverterV2`` subclass that reads from it. Everything that
decides the artefact (converter flags, the MLIR conversion, the quantizers and their arguments, buffer
deduplication, conversion metadata) is TensorFlow's own code path, so each .tflite is the one the raw
converter writes with the same settings. When the float models of int8 and int16x8 are equal (they are:
only the quantizer differs) the second one reuses the first one's calibration.

The subclass leans on private TensorFlow names. ``fast_path_problem`` checks, once per process, the TF version
and every private name and signature it relies on; on any mismatch (or ``EDGETOOL_FAST_CONVERT=0``)
``make_converter`` returns the public ``TFLiteConverter.from_saved_model`` converter instead — slower, same files.
Callers do not use this module directly: ``edge_tool.tflite_converter.run`` makes and runs every converter.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_tool.tflite_converter import calibration_shards
from edge_tool.tflite_converter.loop_guard import refuse_unsafe_loops

# The TensorFlow minor versions whose private converter internals the fast path was checked on (byte-identical files in
# every mode: tests/test_converter_fast_path.py, run on each row CI installs); any other version uses the public path.
TESTED_TF = ("2.19", "2.20", "2.21")
_QUANTIZE_PARAMS = (
    "self",
    "result",
    "input_type",
    "output_type",
    "activations_type",
    "bias_type",
    "allow_float",
    "enable_variable_quantization",
    "debug_options",
)
_MLIR_QUANTIZE_KWARGS = (
    "input_data_type",
    "output_data_type",
    "enable_variable_quantization",
    "disable_per_channel_for_dense_layers",
    "debug_options_str",
)
_QUANTIZE_MODEL_OVERLOAD = "arg0: int, arg1: int, arg2: bool, arg3: int, arg4: int, arg5: bool, arg6: bool"


@dataclass
class _Calibration:
    """One fed calibrator (its min/max statistics) and the calibrated float model it yields."""

    calibrator: object
    calibrated: bytes


@dataclass
class SharedSource:
    """Per-run state shared by every converter made with ``make_converter``."""

    saved_model: Path
    signature_key: str
    tags: frozenset = frozenset({"serve"})
    _graph: tuple | None = None
    _graph_def: object = None
    _calibrations: dict = field(default_factory=dict)
    float_models: dict = field(default_factory=dict)  # allow_select_tf_ops -> float .tflite (the public path's guard)
    callbacks: dict = field(default_factory=dict)  # id(edgetool callback) -> (it, its guarded wrapper), made once

    def graph(self, converter) -> tuple:
        """(graph_def, input_tensors, output_tensors) of the SavedModel, loaded on first use."""
        if self._graph is None:
            from tensorflow.lite.python import lite

            self._graph = lite.TFLiteSavedModelConverterV2._load_saved_model(
                converter, str(self.saved_model), set(self.tags)
            )
        return self._graph

    def graph_def(self):
        """The SavedModel's GraphDef as stored, read once (no import into a ``tf.Graph``).

        The MLIR path of ``convert()`` uses it for statistics and the quantization-aware-training check only, which
        read node ``op`` names: the same answer as ``graph()``'s (whose import adds default attributes in place)."""
        if self._graph is not None:
            return self._graph[0]
        if self._graph_def is None:
            from tensorflow.python.saved_model import loader_impl

            meta = loader_impl.SavedModelLoader(str(self.saved_model)).get_meta_graph_def_from_tags(set(self.tags))
            self._graph_def = meta.graph_def
        return self._graph_def

    def calibration(self, float_model: bytes, dataset, registerers: tuple[list, list]) -> _Calibration:
        """Calibrate ``float_model`` on ``dataset`` once; later calls with the same model bytes and data reuse it."""
        key = (hashlib.sha256(bytes(float_model)).hexdigest(), dataset.input_gen)
        if key in self._calibrations:
            return self._calibrations[key]
        from tensorflow.lite.python.optimize import calibrator as _calibrator

        model = _calibrator.add_intermediate_tensors(float_model)
        cal = _calibrator.Calibrator(model, *registerers)
        if registerers[1]:  # Python-function registerers cannot reach a worker process
            calibrated = cal.calibrate(dataset.input_gen)
        else:
            done = calibration_shards.calibrate(cal, model, dataset.input_gen, registerers[0])
            calibrated = done.model
            calibration_shards.report(done)
            if done.shards > 1:  # the merged ranges are in the calibrated model: a wrapper on it quantizes from them
                cal = _calibrator.Calibrator(calibrated, *registerers)
        self._calibrations[key] = _Calibration(cal, calibrated)
        return self._calibrations[key]


@functools.cache
def fast_path_problem() -> str | None:
    """None when the fast path may be used, else why not (forced off, untested TF, a private name changed)."""
    if os.environ.get("EDGETOOL_FAST_CONVERT", "1") == "0":
        return "EDGETOOL_FAST_CONVERT=0"
    import tensorflow as tf
    from tensorflow.lite.python import lite
    from tensorflow.lite.python.optimize import calibrator
    from tensorflow.python.saved_model import loader_impl

    if ".".join(tf.__version__.split(".")[:2]) not in TESTED_TF:
        return f"TensorFlow {tf.__version__} is not one the fast path was checked on ({', '.join(TESTED_TF)})"
    base = getattr(lite, "TFLiteSavedModelConverterV2", None)
    checks = {
        "TFLiteSavedModelConverterV2": base is not None,
        "_load_saved_model/_convert_from_saved_model": all(
            hasattr(base, n) for n in ("_load_saved_model", "_convert_from_saved_model")
        ),
        "_quantize(...)": _params(getattr(base, "_quantize", None)) == _QUANTIZE_PARAMS,
        "convert.__wrapped__": hasattr(getattr(base, "convert", None), "__wrapped__"),
        "_export_metrics/_mlir_quantize/RepresentativeDataset": all(
            hasattr(lite, n) for n in ("_export_metrics", "_mlir_quantize", "RepresentativeDataset")
        ),
        "_mlir_quantize(...)": set(_MLIR_QUANTIZE_KWARGS) <= set(_params(getattr(lite, "_mlir_quantize", None))),
        "TFLiteConverterBase._set_original_model_type": hasattr(lite.TFLiteConverterBase, "_set_original_model_type"),
        "SavedModelLoader.get_meta_graph_def_from_tags": hasattr(
            getattr(loader_impl, "SavedModelLoader", None), "get_meta_graph_def_from_tags"
        ),
        "calibrator": all(hasattr(calibrator, n) for n in ("add_intermediate_tensors", "Calibrator")),
        "Calibrator._create_input_array_from_dict": hasattr(
            getattr(calibrator, "Calibrator", None), "_create_input_array_from_dict"
        ),
        "CalibrationWrapper.QuantizeModel(7 args)": _QUANTIZE_MODEL_OVERLOAD
        in (
            getattr(
                getattr(getattr(calibrator._calibration_wrapper, "CalibrationWrapper", None), "QuantizeModel", None),
                "__doc__",
                None,
            )
            or ""
        ),
    }
    failed = [name for name, ok in checks.items() if not ok]
    return f"TensorFlow's private converter API changed ({', '.join(failed)})" if failed else None


def _params(func) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return ()


def make_converter(shared: SharedSource):
    """A converter on ``shared``'s SavedModel and signature, configured like ``TFLiteConverter.from_saved_model``.

    The fast shared-work subclass when ``fast_path_problem()`` is None, else the public converter.
    """
    from tensorflow.lite.python import conversion_metadata_schema_py_generated as meta
    from tensorflow.lite.python import lite

    if fast_path_problem() is not None:
        return lite.TFLiteConverterV2.from_saved_model(
            str(shared.saved_model), signature_keys=[shared.signature_key], tags=set(shared.tags)
        )
    cls = _converter_class(lite)
    lite.TFLiteConverterBase._set_original_model_type(meta.ModelType.TF_SAVED_MODEL)  # as from_saved_model does
    return cls(shared)


_CLASS = None


def checks_loops_itself(conv) -> bool:
    """True when ``conv`` is the fast-path converter, whose quantizer already calls ``refuse_unsafe_loops``."""
    return _CLASS is not None and isinstance(conv, _CLASS)


def _converter_class(lite):
    """Define the subclass lazily (it needs TensorFlow's lite module)."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from tensorflow.python.framework import dtypes

    class SharedSavedModelConverter(lite.TFLiteSavedModelConverterV2):
        """TFLiteSavedModelConverterV2 reading the GraphDef and calibrations from a SharedSource."""

        def __init__(self, shared: SharedSource) -> None:
            super().__init__(str(shared.saved_model), set(shared.tags), [shared.signature_key])
            self._shared = shared

        def _load_saved_model(self, saved_model_dir, saved_model_tags):
            return self._shared.graph(self)

        @lite._export_metrics
        def convert(self):
            """Convert through the SavedModel importer; no ``tf.saved_model.load`` (its debug info is unused there)."""
            if self.saved_model_dir is None or not self.experimental_new_converter:
                return lite.TFLiteSavedModelConverterV2.convert.__wrapped__(self)
            self._debug_info = None
            return self._convert_from_saved_model(self._shared.graph_def())

        def _quantize(
            self,
            result,
            input_type,
            output_type,
            activations_type,
            bias_type,
            allow_float,
            enable_variable_quantization,
            debug_options,
        ):
            """The base class's quantization with the calibration step shared across modes."""
            refuse_unsafe_loops(result, activations_type)
            by_name = [x for x in self.target_spec._experimental_custom_op_registerers if isinstance(x, str)]
            by_func = [x for x in self.target_spec._experimental_custom_op_registerers if not isinstance(x, str)]
            if not isinstance(self.representative_dataset, lite.RepresentativeDataset):
                self.representative_dataset = lite.RepresentativeDataset(self.representative_dataset)
            cal = self._shared.calibration(result, self.representative_dataset, (by_name, by_func))
            if self._experimental_calibrate_only:
                return cal.calibrated
            if self.experimental_new_quantizer and activations_type != dtypes.int16:
                return lite._mlir_quantize(
                    cal.calibrated,
                    self._experimental_disable_per_channel,
                    input_data_type=input_type,
                    output_data_type=output_type,
                    enable_variable_quantization=enable_variable_quantization,
                    disable_per_channel_for_dense_layers=(
                        self._experimental_disable_per_channel_quantization_for_dense_layers
                    ),
                    debug_options_str=debug_options.SerializeToString(),
                )

            from tensorflow.lite.python.convert_phase import ConverterError

            # Calibrator.calibrate_and_quantize without feeding the data again: the statistics are in the wrapper.
            try:
                return cal.calibrator._calibrator.QuantizeModel(
                    np.dtype(input_type.as_numpy_dtype()).num,
                    np.dtype(output_type.as_numpy_dtype()).num,
                    allow_float,
                    np.dtype(activations_type.as_numpy_dtype()).num,
                    np.dtype(bias_type.as_numpy_dtype()).num,
                    self._experimental_disable_per_channel,
                    self._experimental_disable_per_channel_quantization_for_dense_layers,
                )
            except RuntimeError as exc:  # the C++ quantizer refusing the model ("... not yet supported for op")
                raise ConverterError(str(exc)) from exc  # (wrong arguments would be a TypeError: an edgetool bug)

    _CLASS = SharedSavedModelConverter
    return _CLASS
