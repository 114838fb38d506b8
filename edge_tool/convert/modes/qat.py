"""qat: quantization-aware fine-tuning with tfmot, then full-integer int8 — shipped only when it beats int8 PTQ."""

from edge_tool.convert.registry import MODES, ModeSpec


def build(ctx) -> bytes:
    """Fine-tune a QAT copy of the Keras model, convert it and plain int8 PTQ, ship the more accurate one.

    Both are measured in LiteRT on ``--eval-data``, or on the held-out split of ``--train-data`` that also picked
    the best epoch; the decision (both accuracies, the reason) goes into the manifest record of the artefact.
    """
    from edge_tool.convert.modes import qat_build  # noqa: PLC0415 - tfmot, numpy: loaded when qat builds

    return qat_build.build(ctx)


SPEC = MODES.register(
    ModeSpec(
        "qat",
        weights="int8",
        activations="int8, after quantization-aware fine-tuning",
        integer_only=True,
        needs_calibration=True,
        needs_train_data=True,
        needs_keras=True,
        io_types=("model", "float32", "int8", "uint8"),
        build=build,
        integer_rank=0,
    )
)
