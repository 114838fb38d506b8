"""convert on a model already trained quantization-aware (FakeQuant ops in its graph): int8 from the trained ranges
(said once), and --quant qat not run on it again (why, and --quant int8 instead)."""

from __future__ import annotations

import dataclasses

from edge_tool.convert.modes import QuantMode
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import UsageError
from edge_tool.models.qat_trained import fake_quant_ops, qat_on_qat_refusal, qat_trained_note


def qat_trained_step(config, source, failed: dict) -> tuple[object, int]:
    """(the config without qat when the source is already QAT-trained, the FakeQuant op count); qat recorded in
    ``failed`` (with other modes to build) or refused (UsageError, alone)."""
    count = fake_quant_ops(source.saved_model)
    if not count:
        return config, 0
    if QuantMode.INT8 in config.modes:
        console.print(f"note: {term(qat_trained_note(count))}")
    if QuantMode.QAT in config.modes:
        why = qat_on_qat_refusal(config.model, count)
        kept = tuple(m for m in config.modes if m is not QuantMode.QAT)
        if not kept or not config.keep_going:
            raise UsageError(why)
        failed[QuantMode.QAT.value] = " ".join(why.split())
        config = dataclasses.replace(config, modes=kept, eval_data=None)
    return config, count
