"""Build one LM mode's multi-signature .tflite: the TFLite converter on every prefill + decode signature (builtin ops
only), or ai-edge-quantizer's weight-only recipe on the fp32 file, with what it did read from the flatbuffers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.errors import ConversionError
from edge_tool.lm_converter.flatbuf import dedupe_buffers, gather_to_embedding_lookup
from edge_tool.lm_converter.modes import LM_MODES
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter
from edge_tool.tflite_quantizer.facts import weight_facts
from edge_tool.tflite_quantizer.run import quantize_tflite

BUILTIN_WAY_OUT = (
    "An LM must run on TFLite builtin ops only (LiteRT.js, LiteRT-LM and the boards have no Flex delegate): write the "
    "endpoints from Keras layers and tf ops the converter lowers to builtins (edge_tool.lm.export does; docs/lm.md "
    "lists what lowers), e.g. the cache write as tf.raw_ops.XlaDynamicUpdateSlice rather than a scatter of TF ops."
)


@dataclass(frozen=True)
class LmBuilt:
    """One mode's bytes and what the build says about them: ``float_ops`` (op -> count of operators whose weights
    stayed float, e.g. the embedding GATHER) and ``notes`` (sentences the output and the manifest carry)."""

    mode: str
    data: bytes = field(repr=False)
    quantized_ops: dict
    float_ops: dict
    quantizer: dict | None  # ai-edge-quantizer's record (QuantizedTflite.to_dict), None for converter modes
    notes: tuple[str, ...] = ()


def convert_signatures(saved_model: Path, keys: tuple[str, ...], mode: str) -> bytes:
    """The TFLite converter on ``keys`` of ``saved_model`` configured for converter ``mode``; builtin ops only."""
    import tensorflow as tf

    spec = LM_MODES[mode]
    converter = new_converter(Path(saved_model), signatures=keys)
    spec.configure(tf, converter)
    refusal = Refusal(
        model=saved_model, failed=f"The TFLite converter failed on {saved_model} ({mode})", builtin_only=BUILTIN_WAY_OUT
    )
    data = run_converter(converter, refusal)
    flex = summarize_tflite(data).flex_ops
    if flex:
        raise ConversionError(
            f"{saved_model} ({mode}) needs TF ops outside the builtin set ({', '.join(flex)}). " + BUILTIN_WAY_OUT
        )
    return data


def build_mode(mode: str, saved_model: Path, keys: tuple[str, ...], fp32: bytes | None, vocab: int) -> LmBuilt:
    """``mode``'s file: converter modes from ``saved_model``; quantizer modes from the ``fp32`` bytes (the token
    embedding's GATHER, a table of ``vocab`` rows, made an EMBEDDING_LOOKUP first)."""
    spec = LM_MODES[mode]
    if spec.recipe is None:
        data = convert_signatures(saved_model, keys, mode)
        facts = weight_facts(data)
        return LmBuilt(
            mode, data, facts.quantized_ops, facts.float_ops, None, _float_notes(mode, facts.float_ops, data)
        )
    source, rewritten = gather_to_embedding_lookup(fp32, vocab)
    result = quantize_tflite(source, spec.recipe)
    if not result.changed:
        raise ConversionError(
            f"{mode} did nothing: {result.unchanged_reason()} For a language model, weight-int4 (per channel) "
            "quantizes the same weights to 4 bits."
        )
    notes = (result.float_note(),) if result.float_ops else ()
    if rewritten:
        notes += (
            f"{rewritten} token-embedding GATHER op(s) rewritten as EMBEDDING_LOOKUP (same rows) so ai-edge-quantizer "
            f"{result.quantizer_version} quantizes their tables too (it leaves GATHER tables in float).",
        )
    record = result.note().to_dict() | {"gather_rewritten": rewritten}
    data = dedupe_buffers(result.data)
    return LmBuilt(mode, data, result.quantized_ops, result.float_ops, record | {"bytes": len(data)}, notes)


def _float_notes(mode: str, float_ops: dict, data: bytes) -> tuple[str, ...]:
    """What stayed float in a converter mode that quantizes weights (fp16's float16 weights count as converted)."""
    if mode == "fp32" or not float_ops:
        return ()
    ops = ", ".join(f"{name} ×{n}" for name, n in sorted(float_ops.items()))
    return (f"left with float32 weights by the TFLite converter ({mode}): {ops}.",)
