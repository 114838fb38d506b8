"""qat: quantization-aware fine-tuning with tfmot, then full-integer int8 conversion."""

from edge_tool.convert.config import QuantMode
from edge_tool.convert.registry import register


@register(
    QuantMode.QAT,
    "quantization-aware training, then full-integer int8",
    needs_calibration=True,
    needs_train_data=True,
    needs_keras=True,
    io_types=("model", "float32", "int8", "uint8"),
    expected_size_ratio=0.27,
)
def build(ctx) -> bytes:
    """Fine-tune a QAT copy of the Keras model on the training data, then convert it to full int8."""
    from edge_tool.convert.qat import QatOptions, qat_to_tflite, quantization_aware_model  # noqa: PLC0415

    x, y = ctx.train_data()
    options = QatOptions(epochs=ctx.config.qat_epochs, strategy=ctx.config.strategy,
                         replicas=ctx.config.replicas, seed=ctx.config.seed)
    model = quantization_aware_model(ctx.keras_source(), x, y, options, progress=ctx.epoch_progress)
    io_type = "float32" if ctx.io_dtype is None else ctx.config.io_type.value
    return qat_to_tflite(model, ctx.representative_dataset, io_type)
