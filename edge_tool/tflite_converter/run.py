"""Every TFLite conversion edgetool makes: ``new_converter`` builds the converter, ``run_converter`` runs it.

``convert``'s modes, ``convert --quant auto``'s selective int8, QAT's export, ``eval --per-layer``, ``demo --litert``
and ``check``'s batch-1 int8 artefact all go through these two, so what one conversion needs none can miss:

- ``--allow-select-tf-ops`` applied after the mode's own settings (they set the op sets);
- the WHILE-loop guard: calibrating a builtin WHILE loop kills TensorFlow's calibrator (SIGSEGV, 2.19 to 2.21). The fast-path
  converter checks the float model inside its quantizer; for the public one a float twin is converted first;
- the warning filter (the calibrator feeds samples through tf.lite.Interpreter, which warns of its deprecation);
- the converter's failures as ConversionError, blamed by the exception's type, never by where it was raised:

  - ``ConverterError``: the MLIR converter refused the model. Its ``errors`` (``ConverterErrorData``) say which ops
    need TF Select kernels (``ERROR_NEEDS_FLEX_OPS``, the op in ``operator.name``), so the refusal names them;
  - ``ValueError``, ``RuntimeError``: the only types TensorFlow's converter API (its argument and model checks) and
    the calibrator/quantizer (C++ through pybind) raise besides ``ConverterError`` — the model refused too;
  - edgetool's own errors (``EdgeToolError``: the loop guard, the calibration data) pass unchanged;
  - anything else is a bug in edgetool and surfaces as an internal error (exit 70): a TypeError or AttributeError
    (what a changed private API gives), and any exception of edgetool's own code the converter calls back — the
    representative dataset is wrapped (``edgetool_callback``) so that its ValueError cannot pass for the converter's.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.core.signals import raise_if_stopping
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.models.jax_origin import is_jax_export, jax_way_out
from edge_tool.models.signatures import SERVING
from edge_tool.tflite_converter.diagnose import describe_failure, python_callbacks, string_way_out, table_way_out
from edge_tool.tflite_converter.fast_path import SharedSource, checks_loops_itself, make_converter
from edge_tool.tflite_converter.loop_guard import LoopRefused, refuse_unsafe_loops
from edge_tool.trust.side_effects import python_callback_refusal

SELECT_ADVICE = (
    "Replace them in the model, or pass --allow-select-tf-ops to embed TF (Flex) kernels — the app then "
    "needs the Flex delegate (larger binary)."
)


class OpsNotBuiltin(ConversionError):
    """The converter left ops it could not express as TFLite builtins (Flex-only ops, or builtin ops it could not
    legalize at the traced shapes: a fixed batch may fix the latter, ``convert.batch_retry``)."""


@dataclass(frozen=True)
class Refusal:
    """How ``run_converter`` words a failure of one conversion.

    ``failed`` starts the message ("The TFLite converter failed on m"), ``builtin_only`` is the way out when the
    model needs ops the builtin set lacks, ``loop`` the one when it has a WHILE loop calibration would crash on
    (None: convert's), ``hints`` says whether convert's options (--batch, --quant) may be suggested, with
    ``batch``/``retrace`` (how --batch re-traced the model) for them.
    """

    model: object
    failed: str
    builtin_only: str = SELECT_ADVICE
    loop: str | None = None
    hints: bool = False
    batch: int | None = None
    retrace: str | None = None


class CallbackFailed(Exception):
    """edgetool's own code, called back by the converter (the representative dataset), raised: a bug, not the model.

    ``original`` is that exception (TensorFlow re-raises with ``from None``; run_converter chains it back)."""

    def __init__(self, message: str, original: BaseException) -> None:
        super().__init__(message)
        self.original = original


@dataclass(frozen=True)
class _Made:
    shared: SharedSource
    allow_select_tf_ops: bool


_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # converter -> how new_converter made it


def new_converter(
    source: SharedSource | Path,
    *,
    signature: str = SERVING,
    allow_select_tf_ops: bool = False,
    signatures: tuple[str, ...] = (),
):
    """A fresh converter on a SavedModel's ``signature``, configured like ``TFLiteConverter.from_saved_model``.

    ``source`` is a SavedModel directory, or a ``SharedSource`` (which names its signature) whose GraphDef and
    calibrations the converters of one run share. ``allow_select_tf_ops`` adds the TF Select op set when it runs.
    ``signatures`` (two or more keys, e.g. an LM's prefill and decode) makes one multi-signature model with
    TensorFlow's own converter. Configure it (optimizations, representative data, op sets), then give it to
    ``run_converter``.
    """
    if len(signatures) > 1:
        from tensorflow.lite.python import lite

        shared = SharedSource(Path(source), signatures[0])
        converter = lite.TFLiteConverterV2.from_saved_model(str(source), signature_keys=list(signatures))
        _MADE[converter] = _Made(shared, allow_select_tf_ops)
        return converter
    shared = source if isinstance(source, SharedSource) else SharedSource(Path(source), signature)
    converter = make_converter(shared)
    _MADE[converter] = _Made(shared, allow_select_tf_ops)
    return converter


def run_converter(converter, refusal: Refusal, call: Callable | None = None):
    """``call(converter)`` (default: ``converter.convert()``) with the select ops, the WHILE-loop guard and the
    warning filter; the converter's refusal raised as ConversionError worded by ``refusal`` (see the module doc)."""
    from tensorflow.lite.python.convert_phase import ConverterError

    made = _MADE.get(converter)
    if made is None:
        raise TypeError("run_converter runs converters made by new_converter only")
    if made.allow_select_tf_ops:
        _add_select_ops(converter)
    try:
        if converter.representative_dataset is not None:
            converter.representative_dataset = edgetool_callback(converter.representative_dataset, made.shared)
            if not checks_loops_itself(converter):
                _refuse_unsafe_loops(converter, made, refusal)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
            return call(converter) if call is not None else converter.convert()
    except CallbackFailed as exc:
        raise exc from exc.original
    except LoopRefused as exc:
        if refusal.loop is None:
            raise
        raise ConversionError(f"{exc.finding} {refusal.loop}") from None
    except EdgeToolError:
        raise
    except (ConverterError, ValueError, RuntimeError) as exc:
        raise_if_stopping()  # pybind11 may have replaced a stop signal's Terminated by its own RuntimeError
        raise refusal_error(exc, refusal, made.shared, made.allow_select_tf_ops) from None


def edgetool_callback(func: Callable, shared: SharedSource | None = None) -> Callable:
    """``func`` (a generator function edgetool hands the converter or the debugger) with any exception of its own but
    edgetool's typed errors raised as CallbackFailed; made once per ``shared`` (its calibration cache keys on it)."""
    if isinstance(func, _Guarded) or not callable(func):  # not callable: TF's RepresentativeDataset, already run
        return func
    if shared is not None and id(func) in shared.callbacks:
        return shared.callbacks[id(func)][1]
    guarded = _Guarded(func)
    if shared is not None:
        shared.callbacks[id(func)] = (func, guarded)
    return guarded


class _Guarded:
    def __init__(self, func: Callable) -> None:
        self.func = func

    def __call__(self):
        try:
            yield from self.func()
        except EdgeToolError:
            raise
        except Exception as exc:
            raise CallbackFailed(
                f"edgetool's {getattr(self.func, '__qualname__', 'callback')} raised {type(exc).__name__}: {exc}", exc
            ) from exc


def refusal_error(exc: Exception, refusal: Refusal, shared: SharedSource, allow_select_tf_ops: bool) -> ConversionError:
    """The ConversionError for the converter's ``exc`` on ``shared``'s SavedModel and signature: a Python callback
    the signature runs first (no option helps), then the ops TF Select could give it, else the converter's own
    summary."""
    callbacks = python_callbacks(shared.saved_model, shared.signature_key)
    if callbacks:
        return ConversionError(python_callback_refusal(refusal.model, callbacks))
    flex = ops_needing_select(exc)
    if flex and not allow_select_tf_ops:
        return OpsNotBuiltin(
            f"{refusal.model} uses ops the TFLite builtin op set cannot express: "
            f"{', '.join(flex)}.{_first_way_out(string_way_out(shared), refusal.builtin_only)}{table_way_out(flex)}"
        )
    if is_jax_export(shared.saved_model):  # no option of convert helps (--batch included): say what it is instead
        detail = describe_failure(str(exc), refusal.batch, allow_select_tf_ops, refusal.retrace, hints=False)
        # what it is and the way out first (a terminal or a log keeps the first lines), the converter's words after
        return ConversionError(f"{refusal.failed}:{jax_way_out(refusal.model)} The converter said: {detail}")
    detail = describe_failure(str(exc), refusal.batch, allow_select_tf_ops, refusal.retrace, hints=refusal.hints)
    return ConversionError(f"{refusal.failed}: {detail}")


def ops_needing_select(exc: Exception) -> list[str]:
    """The TF op names a ``ConverterError`` reports as needing TF Select (Flex) kernels, sorted; [] for other errors."""
    from tensorflow.compiler.mlir.lite.metrics import converter_error_data_pb2 as pb

    needs_flex = pb.ConverterErrorData.ERROR_NEEDS_FLEX_OPS
    return sorted(
        {
            e.operator.name.removeprefix("tf.")
            for e in getattr(exc, "errors", ())
            if e.error_code == needs_flex and e.operator.name
        }
    )


def _add_select_ops(converter) -> None:
    tf = import_tf()
    ops = set(converter.target_spec.supported_ops or {tf.lite.OpsSet.TFLITE_BUILTINS})
    converter.target_spec.supported_ops = ops | {tf.lite.OpsSet.SELECT_TF_OPS}


def _refuse_unsafe_loops(converter, made: _Made, refusal: Refusal) -> None:
    """The public converter's guard: refuse calibrating a WHILE loop (it segfaults TF 2.19) before trying, on a float
    twin converted once per source."""
    tf = import_tf()
    key = made.allow_select_tf_ops
    if key not in made.shared.float_models:
        twin = new_converter(made.shared, allow_select_tf_ops=key)
        made.shared.float_models[key] = run_converter(twin, refusal)
    int16 = tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    refuse_unsafe_loops(
        made.shared.float_models[key], tf.int16 if int16 in set(converter.target_spec.supported_ops) else None
    )


def _first_way_out(signature: str, builtin_only: str) -> str:
    """A signature taking numeric input is the first way out when there is one (no Flex needed), then Flex."""
    return f"{signature} Otherwise: {builtin_only}" if signature else f" {builtin_only}"
