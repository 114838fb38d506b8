"""Run a .tflite on samples with ai_edge_litert only, in its own process (an artefact may abort the runtime).

Usage: python -m tests.oracles.litert_run MODEL.tflite INPUTS.npz OUTPUTS.npz [--flex]
(--flex: TensorFlow's tf.lite.Interpreter, which has the Flex delegate, for files with TF Select ops)

INPUTS.npz holds one array per model input, keyed by the serving signature's input name (first axis = samples).
Each sample runs alone (batch 1) through the signature runner, which resizes the inputs to the sample's shape (so
dynamic-H×W models run too), after ``reset_all_variables()`` (from the second on) so recurrent state never leaks between samples.
Float data given to an integer-input model is quantized with the input's own scale and zero point; integer outputs
are dequantized. OUTPUTS.npz gets one array per signature output name.
"""

from __future__ import annotations

import sys

import numpy as np

FLEX = False


def _interpreter(path: str):
    if FLEX:  # a model with TF (Flex) ops: TensorFlow's own interpreter links the Flex delegate, LiteRT's does not
        import tensorflow as tf

        return tf.lite.Interpreter(model_path=path, num_threads=1)
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_path=path, num_threads=1)


def _to_input(value: np.ndarray, detail: dict) -> np.ndarray:
    dtype = detail["dtype"]
    scale, zero = detail.get("quantization", (0.0, 0))
    if np.issubdtype(dtype, np.integer) and np.issubdtype(value.dtype, np.floating) and scale:
        info = np.iinfo(dtype)
        return np.clip(np.round(value / scale) + zero, info.min, info.max).astype(dtype)
    return value.astype(dtype)


def _from_output(value: np.ndarray, detail: dict) -> np.ndarray:
    scale, zero = detail.get("quantization", (0.0, 0))
    if value.dtype.kind in "OSU":  # string outputs (a label lookup) stay strings, as bytes (npz without pickles)
        return value.astype(bytes)
    if np.issubdtype(value.dtype, np.integer) and scale:
        return (value.astype(np.float32) - zero) * scale
    return value.astype(np.float32)


def run(model_path: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs of every sample, run one at a time with the variables reset before each."""
    interp = _interpreter(model_path)
    signatures = interp.get_signature_list()
    key = "serving_default" if "serving_default" in signatures else next(iter(signatures))
    runner = interp.get_signature_runner(key)
    in_details = runner.get_input_details()
    out_details = runner.get_output_details()
    missing = sorted(set(in_details) - set(inputs))
    if missing:
        raise SystemExit(f"inputs.npz lacks {missing}; the model's signature takes {sorted(in_details)}")
    n = len(next(iter(inputs.values())))
    rows: dict[str, list] = {name: [] for name in out_details}
    for i in range(n):
        if i:  # the first sample starts from a fresh interpreter; resetting before any allocation raises
            interp.reset_all_variables()
        feed = {name: _to_input(inputs[name][i : i + 1], in_details[name]) for name in in_details}
        out = runner(**feed)
        for name in out_details:
            rows[name].append(_from_output(np.asarray(out[name]), out_details[name])[0])
    return {name: np.stack(v) for name, v in rows.items()}


def main(argv: list[str]) -> None:
    global FLEX
    FLEX = "--flex" in argv
    model, inputs_path, outputs_path = [a for a in argv if a != "--flex"]
    with np.load(inputs_path) as f:
        inputs = {k: f[k] for k in f.files}
    np.savez(outputs_path, **run(model, inputs))


if __name__ == "__main__":
    main(sys.argv[1:])
