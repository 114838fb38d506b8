"""The second engine of ``edgetool demo --litert``: fixed-batch-1 .tflite files (int8, and fp32 when built from a
SavedModel) that the page runs with LiteRT.js.

LiteRT.js (@litertjs/core 2.5.3) cannot run a model whose input has a variable batch dimension ("TensorBuffer ranked
tensor type Float32[1,8,8,1] does not match expected Float32[-1,8,8,1]") and cannot resize inputs, so the int8 model
is built here from the SavedModel's serving signature re-traced with batch 1 (``edge_tool.fixed_batch``, as
``convert --batch 1``), with edgetool's own int8 settings
(``recipes.configure_full_int8``: Optimize.DEFAULT, representative data, TFLITE_BUILTINS_INT8, float32 I/O kept).
"""

from __future__ import annotations

from pathlib import Path

from calibration.spec import dtype_name
from edge_tool.errors import ModelError, UsageError

TFLITE_NAME = "model-int8-b1.tflite"
FP32_NAME = "model-fp32-b1.tflite"  # built beside it from a SavedModel, so the page can pick LiteRT.js fp32 too
IO_DTYPES = ("float32", "int8", "uint8")


def calibration_source(saved_model: Path, calibration_path: Path | None) -> Path:
    """--calibration, else calibration.npz beside the SavedModel; UsageError naming the flag when neither exists."""
    from edge_tool.recipes import missing_calibration_message, resolve_calibration  # noqa: PLC0415

    source = resolve_calibration(Path(saved_model), calibration_path)
    if source is None:
        raise UsageError(missing_calibration_message("--litert builds an int8 model and", saved_model))
    if not source.exists():
        raise UsageError(f"--calibration {source} does not exist; --litert builds its int8 model from that data.")
    return source


def build_fixed_int8(saved_model: Path, calibration_path: Path | None, contracts: tuple = (),
                     trust_model_code: bool = False) -> bytes:
    """Full-integer int8 .tflite of ``saved_model``'s serving signature with the input batch fixed to 1."""
    return build_fixed(saved_model, calibration_path, ("int8",), contracts, trust_model_code)["int8"]


def build_fixed(saved_model: Path, calibration_path: Path | None, modes: tuple[str, ...], contracts: tuple = (),
                trust_model_code: bool = False, signature: str | None = None) -> dict[str, bytes]:
    """{mode: .tflite bytes} for ``modes`` ('int8', 'fp32') of ``saved_model``'s ``signature`` (default
    serving_default) with the input batch fixed to 1; the batch-1 re-export is made once for all of them (a model
    carrying code refused unless ``trust_model_code``). Image data is read through the input contract ``contracts``."""
    import tempfile  # noqa: PLC0415

    from edge_tool.recipes import configure_full_int8  # noqa: PLC0415
    from edge_tool.fixed_batch import save_fixed_batch  # noqa: PLC0415
    from edge_tool.modelio import SERVING, saved_model_signature  # noqa: PLC0415

    source = calibration_source(saved_model, calibration_path)
    info = saved_model_signature(Path(saved_model), signature or SERVING)
    if len(info.inputs) != 1:
        raise ModelError(f"--litert drives models with exactly one input; this one has {len(info.inputs)}.")
    inp = info.inputs[0]
    if not inp.shape or any(d is None for d in inp.shape[1:]):
        raise ModelError(f"--litert needs a fixed input shape after the batch dimension; {inp.name} has {inp.shape}.")
    import calibration  # noqa: PLC0415

    ds = calibration.load(source, calibration.specs_from(info.inputs), calibration.LoadOptions(images=contracts))
    from edge_tool.env import import_tf  # noqa: PLC0415

    tf = import_tf()
    out = {}
    with tempfile.TemporaryDirectory(prefix="edgetool-b1-") as work:
        fixed = Path(work) / "batch1"
        save_fixed_batch(Path(saved_model), fixed, 1, info.key, trust_model_code=trust_model_code)
        for mode in modes:
            conv = tf.lite.TFLiteConverter.from_saved_model(str(fixed))
            if mode == "int8":
                configure_full_int8(tf, conv, ds.representative_dataset(), None)
            out[mode] = conv.convert()
    return out


def tflite_spec(path: Path, classes: int | None) -> dict:
    """What the page needs to feed and read ``path``: I/O dtype, fixed shape, quantization (scale, zero point)."""
    from edge_tool.runtime import load_interpreter  # noqa: PLC0415

    interp = load_interpreter(Path(path))
    ins, outs = interp.get_input_details(), interp.get_output_details()
    if len(ins) != 1 or len(outs) != 1:
        raise ModelError(f"{path} has {len(ins)} inputs and {len(outs)} outputs; the LiteRT.js engine drives 1 and 1.")
    i, o = ins[0], outs[0]
    shape_sig = [int(d) for d in i.get("shape_signature", i["shape"])]
    problems = []
    if any(d < 0 for d in shape_sig):
        problems.append(f"its input shape {shape_sig} is not fixed (LiteRT.js cannot run a variable batch); "
                        f"re-export it with batch 1 or let --litert build it from the SavedModel")
    if shape_sig and shape_sig[0] != 1:
        problems.append(f"its input batch is {shape_sig[0]}; the page feeds one sample at a time (batch 1)")
    out_shape = [int(d) for d in o["shape"]]
    if out_shape[:1] != [1] or (classes is not None and out_shape != [1, classes]):
        problems.append(f"its output shape is {out_shape}; expected {[1, classes] if classes else '[1, ...]'} "
                        "(the model's output at batch 1)")
    for role, d in (("input", i), ("output", o)):
        if d["dtype"].__name__ not in IO_DTYPES:
            problems.append(f"its {role} dtype is {dtype_name(d['dtype'])}; expected one of {', '.join(IO_DTYPES)}")
    if problems:
        raise ModelError(f"{path} cannot be the LiteRT.js model: " + "; ".join(problems) + ".")
    return {"input": _io(i), "output": _io(o)}


def _io(detail: dict) -> dict:
    scale, zero = detail.get("quantization", (0.0, 0))
    return {"dtype": detail["dtype"].__name__, "shape": [int(d) for d in detail["shape"]],
            "scale": float(scale), "zeroPoint": int(zero)}
