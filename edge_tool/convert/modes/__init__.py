"""One module per TFLite mode, each registering its ``ModeSpec`` in ``edge_tool.convert.registry.MODES`` at import.

The names below are the registry's derived views: the ``QuantMode`` enum, which modes ``all`` and ``--quant auto`` mean, and the
mode table of README.md and docs/convert.md (regenerate with ``python scripts/docs_tables.py``).
"""

# each module registers itself; this order (baseline first, then smaller and more integer) is MODES' order
from edge_tool.convert.modes import fp32, fp16, dynamic, int8, int16x8, qat, weight_only  # noqa: F401, I001
from enum import Enum

from edge_tool.convert.registry import MODES, ModeSpec

__all__ = [
    "MODES",
    "ModeSpec",
    "QuantMode",
    "auto_candidates",
    "every_mode",
    "integer_only_candidates",
    "mode_table",
    "named_modes",
    "tflite_source_modes",
]

# convert's mode enum: every registered mode, in MODES' order (a str Enum: QuantMode.INT8 == "int8")
QuantMode = Enum("QuantMode", [(name.upper().replace("-", "_"), name) for name in MODES], type=str, module=__name__)
QuantMode.__doc__ = "A TFLite quantization mode: one registered in MODES."


def every_mode(has_train_data: bool = False) -> tuple[str, ...]:
    """What ``--quant all`` means: every mode in ``all`` (not the ai-edge-quantizer weight-only modes, built when
    named), those that fine-tune only when training data is given."""
    return tuple(name for name, spec in MODES.items() if spec.in_all and (has_train_data or not spec.needs_train_data))


def named_modes() -> tuple[str, ...]:
    """Every mode ``--quant`` accepts by name."""
    return tuple(MODES)


def tflite_source_modes() -> tuple[str, ...]:
    """The modes a float .tflite given as the source can be quantized to (those with an ai-edge-quantizer recipe)."""
    return tuple(name for name, spec in MODES.items() if spec.tflite_recipe is not None)


def auto_candidates(has_train_data: bool) -> tuple[str, ...]:
    """The modes ``--quant auto`` builds and measures (plus selective int8, which it derives from int8)."""
    return tuple(m for m in every_mode(has_train_data) if MODES[m].auto_candidate)


def integer_only_candidates(has_train_data: bool) -> tuple[str, ...]:
    """The auto candidates whose activations are int8 (``--quant auto --require integer-only``)."""
    return tuple(m for m in auto_candidates(has_train_data) if MODES[m].integer_only)


def mode_table() -> str:
    """The Markdown table of every mode (weights, activations, what it needs, I/O types), from the registry."""
    rows = ["| mode | weights | activations | needs | I/O types | from a float .tflite |", "|---|---|---|---|---|---|"]
    for name, spec in MODES.items():
        needs = [
            need
            for flag, need in (
                (spec.needs_calibration, "calibration data"),
                (spec.needs_train_data, "training data"),
                (spec.needs_keras, "a Keras-2 model"),
            )
            if flag
        ]
        io = ", ".join("model's own" if t == "model" else t for t in spec.io_types)
        source = f"`{spec.tflite_recipe}` recipe" if spec.tflite_recipe else "–"
        rows.append(f"| `{name}` | {spec.weights} | {spec.activations} | {', '.join(needs) or '–'} | {io} | {source} |")
    return "\n".join(rows) + "\n"
