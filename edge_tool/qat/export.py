"""A fine-tuned QAT model to full-integer int8 TFLite, its serving signature keeping the original input/output
names."""

from __future__ import annotations

import tempfile

from edge_tool.errors import UsageError
from edge_tool.litert.recipes import configure_full_int8
from edge_tool.qat.source import import_stack
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter

IO_TYPES = ("float32", "int8", "uint8")


def _serving_module(tf, qat_model, output_names: list[str], batch: int | None = None):
    """A tf.Module whose serving signature keeps the original input/output names (not tfmot's quant_*); ``batch``
    fixes the input batch (as --batch does for the other modes)."""
    specs = [
        tf.TensorSpec(t.shape if batch is None else (batch, *t.shape[1:]), t.dtype, name=n)
        for t, n in zip(qat_model.inputs, qat_model.input_names)
    ]

    @tf.function(input_signature=specs)
    def serve(*xs):
        outs = qat_model(list(xs) if len(xs) > 1 else xs[0], training=False)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return dict(zip(output_names, outs))

    module = tf.Module()
    # the weights only: saving the Keras object would trace every layer's own call functions too, and tfmot's
    # Conv2DTranspose wrapper's captures a tensor of the outer trace there (a save error); ``serve`` is all we convert
    module.model_variables = list(qat_model.variables)
    module.serve = serve
    return module, serve


def _output_names(qat_model) -> list[str]:
    return [getattr(layer, "layer", layer).name for layer in (qat_model.get_layer(n) for n in qat_model.output_names)]


def qat_to_tflite(
    qat_model,
    representative_dataset,
    io_type: str = "float32",
    output_names: list[str] | None = None,
    batch: int | None = None,
) -> bytes:
    """Convert a fine-tuned QAT model to full-integer int8 TFLite (TFLITE_BUILTINS_INT8 only).

    ``representative_dataset`` yields lists with one batch-1 array per input (in the model's input order); it
    calibrates any op tfmot left float. ``io_type`` "float32" keeps float input/output; "int8"/"uint8" makes the
    I/O integer too. ``output_names`` names the signature outputs (default: the original output layer names);
    ``batch`` fixes the input batch of the file (None: free, as the Keras model has it).
    """
    if io_type not in IO_TYPES:
        raise UsageError(f"QAT io_type must be one of {', '.join(IO_TYPES)}; got {io_type!r}.")
    if representative_dataset is None:
        raise UsageError("QAT conversion to full-integer int8 needs a representative dataset (calibration data).")
    tf, _, _ = import_stack()
    module, serve = _serving_module(tf, qat_model, output_names or _output_names(qat_model), batch)
    with tempfile.TemporaryDirectory(prefix="edgetool-qat-") as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_default": serve.get_concrete_function()})
        conv = new_converter(tmp, signature="serving_default")
        configure_full_int8(tf, conv, representative_dataset, None if io_type == "float32" else getattr(tf, io_type))
        return bytes(run_converter(conv, _REFUSAL))


_REFUSAL = Refusal(
    "The QAT model",
    "Full-integer int8 conversion of the QAT model failed",
    builtin_only="QAT's full-integer model keeps to the builtin int8 op set (--allow-select-tf-ops "
    "does not apply to it): replace them in the model.",
)
