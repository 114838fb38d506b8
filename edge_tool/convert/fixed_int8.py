"""Fixed-batch-1 .tflite builds (int8, and fp32) of a SavedModel's serving signature, for runtimes that cannot
resize inputs: the LiteRT.js engine of ``edgetool demo --litert`` and ``check``'s litertjs target.

LiteRT.js (@litertjs/core 2.5.3) cannot run a model whose input has a variable batch dimension ("TensorBuffer ranked
tensor type Float32[1,8,8,1] does not match expected Float32[-1,8,8,1]") and cannot resize inputs, so the int8 model
is built here from the SavedModel's serving signature re-traced with batch 1 (``edge_tool.models.fixed_batch``, as
``convert --batch 1``), with edgetool's own int8 settings
(``recipes.configure_full_int8``: Optimize.DEFAULT, representative data, TFLITE_BUILTINS_INT8, float32 I/O kept).
The page's check of such a file (``tflite_spec``) is the demo's: ``demo.litert_spec``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from edge_tool import calibration
from edge_tool.core.env import import_tf
from edge_tool.core.steps import console
from edge_tool.errors import ModelError, UsageError
from edge_tool.litert.recipes import configure_full_int8, missing_calibration_message, resolve_calibration
from edge_tool.models.fixed_batch import save_fixed_batch
from edge_tool.models.signatures import SERVING, saved_model_signature
from edge_tool.parsers.tflite_state import read_state
from edge_tool.tflite_converter.fast_path import SharedSource
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter

# integer input dtypes @litertjs/core 2.5.3 cannot hold (its DATATYPES: float32, int32, uint8): the LiteRT.js .tflite
# takes them as int32 and casts inside
INT32_FED = ("int64", "int16", "int8", "uint16", "uint32")


def calibration_source(saved_model: Path, calibration_path: Path | None) -> Path:
    """--calibration, else calibration.npz beside the SavedModel; UsageError naming the flag when neither exists."""
    source = resolve_calibration(Path(saved_model), calibration_path)
    if source is None:
        raise UsageError(missing_calibration_message("--litert builds an int8 model and", saved_model))
    if not source.exists():
        raise UsageError(f"--calibration {source} does not exist; --litert builds its int8 model from that data.")
    return source


def build_fixed_int8(
    saved_model: Path,
    calibration_path: Path | None,
    contracts: tuple = (),
    trust_model_code: bool = False,
    signature: str | None = None,
) -> bytes:
    """Full-integer int8 .tflite of ``saved_model``'s ``signature`` (default serving_default) with the input batch
    fixed to 1."""
    return build_fixed(saved_model, calibration_path, ("int8",), contracts, trust_model_code, signature)["int8"]


def build_fixed(
    saved_model: Path,
    calibration_path: Path | None,
    modes: tuple[str, ...],
    contracts: tuple = (),
    trust_model_code: bool = False,
    signature: str | None = None,
) -> dict[str, bytes]:
    """{mode: .tflite bytes} for ``modes`` ('int8', 'fp32') of ``saved_model``'s ``signature`` (default
    serving_default) with the input batch fixed to 1; the batch-1 re-export is made once for all of them (a model
    carrying code refused unless ``trust_model_code``). Image data is read through the input contract ``contracts``;
    calibration data is needed (and read) for int8 only."""
    info = saved_model_signature(Path(saved_model), signature or SERVING)
    open_inputs = [f"{t.name} {t.shape}" for t in info.inputs if not t.shape or any(d is None for d in t.shape[1:])]
    if open_inputs:
        raise ModelError(f"--litert needs fixed input shapes after the batch dimension; {', '.join(open_inputs)}.")
    ds = None
    if "int8" in modes:
        source = calibration_source(saved_model, calibration_path)
        ds = calibration.load(source, calibration.specs_from(info.inputs), calibration.LoadOptions(images=contracts))

    tf = import_tf()
    out = {}
    with tempfile.TemporaryDirectory(prefix="edgetool-b1-") as work:
        fixed = Path(work) / "batch1"
        if all(t.shape[0] == 1 for t in info.inputs) and info.key == SERVING:
            fixed = Path(saved_model)  # already batch 1 (a stateful RNN's batch_shape): nothing to re-trace
        else:
            save_fixed_batch(Path(saved_model), fixed, 1, info.key, trust_model_code=trust_model_code)
        if any(t.dtype in INT32_FED for t in info.inputs):
            fixed = _int32_inputs(tf, fixed, Path(work) / "int32")
        shared = SharedSource(fixed, SERVING)  # the batch-1 re-export: its GraphDef is read once for every mode
        for mode in sorted(modes, key=lambda m: m != "fp32"):  # fp32 first: it says whether the model has state
            if mode == "int8" and "fp32" in out and read_state(out["fp32"]) is not None:
                console.print(_STATEFUL_NO_INT8)
                continue
            conv = new_converter(shared)
            if mode == "int8":
                configure_full_int8(tf, conv, _as_int32(ds.representative_dataset()), None)
            out[mode] = run_converter(conv, _refusal(saved_model, mode))
    return {mode: out[mode] for mode in modes if mode in out}


_STATEFUL_NO_INT8 = (
    "note: no int8 build: the model keeps state between calls (Keras stateful=True; its loop cannot be calibrated, "
    "docs/streaming.md); the page runs the fp32 .tflite, which carries the state."
)


def _int32_inputs(tf, fixed: Path, out: Path) -> Path:
    """A SavedModel at ``out`` whose serving signature takes int32 where ``fixed``'s takes another integer dtype
    (cast back inside, so the graph computes as before): LiteRT.js feeds no int64/int16/int8 tensors."""
    loaded = tf.saved_model.load(str(fixed))
    fn = loaded.signatures[SERVING]
    _, given = fn.structured_input_signature
    specs = {
        name: tf.TensorSpec(spec.shape, tf.int32 if spec.dtype.name in INT32_FED else spec.dtype, name=name)
        for name, spec in given.items()
    }

    def call(inputs):
        return fn(**{name: tf.cast(x, given[name].dtype) for name, x in inputs.items()})

    module = tf.Module()
    module.source = loaded
    module.serve = tf.function(call, input_signature=[specs])
    tf.saved_model.save(module, str(out), signatures={SERVING: module.serve.get_concrete_function()})
    return out


def _as_int32(dataset):
    """The representative dataset with the integer inputs ``_int32_inputs`` retyped, given as int32."""

    def gen():
        for sample in dataset():  # {input name: array} (calibration.Dataset.representative_dataset)
            yield {k: v.astype("int32") if str(v.dtype) in INT32_FED else v for k, v in sample.items()}

    return gen


def _refusal(saved_model: Path, mode: str) -> Refusal:
    return Refusal(
        saved_model,
        f"The batch-1 {mode} conversion of {saved_model} for LiteRT.js failed",
        builtin_only="LiteRT.js runs builtin ops only (it has no Flex delegate): replace them in the model.",
        loop="--litert builds a calibrated int8 model: give the Keras model a fixed sequence length (its "
        "batch-1 re-trace then unrolls the loop), or pass --tflite with a batch-1 model built without "
        "calibration (convert --batch 1 --quant dynamic).",
    )
