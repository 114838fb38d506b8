"""The guard against calibrating a builtin WHILE loop, which kills TensorFlow's calibrator (SIGSEGV, 2.19 to 2.21).

``refuse_unsafe_loops`` raises ``LoopRefused`` for such a float model before any calibration starts; the fast-path
converter calls it inside its quantizer, ``run`` on a float twin for the public converter.
"""

from __future__ import annotations

from edge_tool.errors import ConversionError
from edge_tool.models.fixed_batch import MAX_UNROLL
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.parsers.tflite_state import read_state, streaming_loop_refusal


class LoopRefused(ConversionError):
    """The WHILE-loop guard's refusal; ``finding`` is it without the way out, which each command words its own."""

    def __init__(self, finding: str, way_out: str) -> None:
        super().__init__(f"{finding} {way_out}")
        self.finding = finding


def refuse_unsafe_loops(float_model: bytes, activations_type) -> None:
    """LoopRefused for a model whose calibration would crash TensorFlow's quantizer (SIGSEGV on 2.19 to 2.21).

    Calibrating a builtin WHILE loop (a Keras GRU / SimpleRNN that ``--batch`` could not unroll; LSTM becomes a
    fused op and is fine) kills the process in ``Calibrator``, for the raw converter too; refusing keeps the run
    alive. The way out it names is convert's.
    """
    loops = [op for op in ("WHILE",) if op in summarize_tflite(bytes(float_model)).ops]
    if loops:
        bits = "int16" if getattr(activations_type, "name", "") == "int16" else "int8"
        if read_state(bytes(float_model)) is not None:  # stateful=True: the loop stays, whatever its length
            raise LoopRefused(*streaming_loop_refusal(bits))
        raise LoopRefused(
            f"calibrated {bits} quantization of a model with a {loops[0]} loop (a Keras recurrent layer edgetool "
            f"could not unroll: a ConvLSTM, or a GRU/SimpleRNN over a sequence of unknown length or longer than "
            f"{MAX_UNROLL} steps; or a tf.while_loop) crashes TensorFlow's calibrator (2.19 to 2.21: segmentation "
            "fault, also with the raw TFLiteConverter), so edgetool refuses it.",
            "Use --quant dynamic (int8 weights, float activations) or fp16 for this model, or give the Keras model a "
            f"fixed sequence length of at most {MAX_UNROLL}: with --batch edgetool then unrolls the loop into plain "
            "ops, which calibrate. LSTM layers (fused UNIDIRECTIONAL_SEQUENCE_LSTM) calibrate as they are.",
        )
