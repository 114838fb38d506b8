"""A model already trained quantization-aware (tfmot ``quantize_model``, or TF's own fake-quant ops): its graph holds
FakeQuant ops whose min/max were learnt in training, read from the MetaGraph without running it. The TFLite
converter turns such a graph into int8 from those trained ranges, so no calibration data is needed."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.models.signatures import read_meta_graph

FAKE_QUANT_OPS = frozenset({"FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxArgs"})


def fake_quant_ops(saved_model: Path) -> int:
    """How many FakeQuant nodes the SavedModel's graph and its functions hold (0 for a float model, or one whose
    MetaGraph cannot be read: the converter then reports what is wrong)."""
    try:
        mg = read_meta_graph(Path(saved_model))
    except ModelError:
        return 0
    count = sum(n.op in FAKE_QUANT_OPS for n in mg.graph_def.node)
    for fn in mg.graph_def.library.function:
        count += sum(n.op in FAKE_QUANT_OPS for n in fn.node_def)
    return count


def qat_trained_note(count: int) -> str:
    """What convert says about an int8 file built from trained ranges."""
    return (
        "the model was trained quantization-aware (its FakeQuant ops hold the ranges learnt in training): "
        "--quant int8 converts with those ranges, no calibration data needed (any given is not used for int8)."
    )


def qat_on_qat_refusal(model: Path, count: int) -> str:
    """Why --quant qat is not run on a model already trained quantization-aware, and what to use."""
    return (
        f"--quant qat fine-tunes a float model with quantization-aware training, but {model} already is one "
        "(FakeQuant ops with trained ranges in its graph): quantizing it again would stack a second set of fake-quant "
        "ops on the first and retrain ranges it already has. Use --quant int8: it converts with the trained ranges "
        "(no calibration data needed) — the file --quant qat would have produced."
    )
