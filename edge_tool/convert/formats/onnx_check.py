"""The onnx format's self-check: the written file run in ONNX Runtime (CPU) against the SavedModel on calibration
samples (else seeded random probes), recorded as the manifest entry's ``agreement``."""

from __future__ import annotations

from edge_tool.convert import fidelity
from edge_tool.errors import ConversionError
from edge_tool.models.probes import probe_feeds
from edge_tool.schemas.format_records import OnnxAgreement

CHECK_SAMPLES = 16  # calibration samples the self-check runs (the first of the same seeded selection)


def input_names(data: bytes) -> list[str]:
    """The ONNX graph's real inputs (initializers excluded)."""
    import onnx

    model = onnx.load_from_string(data)
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def feed_by_name(sample: dict, names: list[str]) -> dict:
    """``sample`` ({signature input: array}) keyed by the ONNX inputs: tf2onnx names them after the signature."""
    if set(sample) == set(names):
        return dict(sample)
    if len(sample) == len(names) == 1:
        return {names[0]: next(iter(sample.values()))}
    raise ConversionError(
        f"the ONNX model's inputs ({', '.join(names)}) are not the signature's "
        f"({', '.join(sample)}); edgetool cannot tell which data feeds which input."
    )


def agreement(data: bytes, ctx, mode: str) -> OnnxAgreement:
    """The file in ONNX Runtime against the SavedModel on calibration samples (else seeded random probes)."""
    if ctx.representative_dataset is not None:
        feeds, inputs = [s for _, s in zip(range(CHECK_SAMPLES), ctx.representative_dataset())], "calibration"
    else:
        feeds, inputs = probe_feeds(ctx.source.signature), "seeded random"
    if not feeds:
        return OnnxAgreement(inputs, 0, False, "no input of a known shape to run")
    try:
        want = ctx.reference_outputs(feeds)
    except (ValueError, TypeError, RuntimeError, ctx.tf.errors.OpError) as exc:
        return OnnxAgreement(inputs, 0, False, f"the SavedModel refused the inputs: {' '.join(str(exc).split())[:200]}")
    got = run_onnx(data, feeds)
    check = fidelity.compare("fp32", want, got)
    if check is None:  # then there is no [batch, classes] float output either: no top-1 to measure
        return OnnxAgreement(inputs, len(feeds), False, "no float output to compare")
    judged = mode == "fp32"
    return OnnxAgreement(
        inputs,
        len(feeds),
        True,
        max_abs_error=check.max_abs_error if check.max_abs_error != float("inf") else None,
        tolerance=check.tolerance if judged else None,
        ok=check.ok if judged else None,
        top1_agreement=top1_agreement(want, got),
        measured=True,
    )


def run_onnx(data: bytes, feeds: list[dict]) -> list[dict]:
    """The ONNX model's outputs ({name: array}) on each feed, in ONNX Runtime's CPU execution provider."""
    import onnxruntime as ort
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 1, 3
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        outputs = [o.name for o in session.get_outputs()]
        return [dict(zip(outputs, session.run(outputs, feed_by_name(feed, names)))) for feed in feeds]
    except (
        state.Fail,
        state.InvalidGraph,
        state.InvalidArgument,
        state.NotImplemented,
        state.RuntimeException,
        state.InvalidProtobuf,
    ) as exc:  # ONNX Runtime's own error types: the file, not edgetool's call
        raise ConversionError(
            f"ONNX Runtime cannot run the exported file ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}), so it is not written: a tf2onnx/ONNX Runtime "
            "problem with this model; --format tflite or --format tfjs may work."
        ) from None


def top1_agreement(want: list[dict], got: list[dict]) -> float | None:
    """Share of samples whose argmax agrees, over the [batch, classes] float outputs (None: no such output)."""
    import numpy as np  # noqa: PLC0415

    same = total = 0
    for w, g in zip(want, got):
        for name, ref in w.items():
            ref, out = np.asarray(ref), np.asarray(g.get(name))
            if ref.ndim == 2 and ref.shape[1] > 1 and out.shape == ref.shape and ref.dtype.kind == "f":
                same += int((ref.argmax(1) == out.argmax(1)).sum())
                total += ref.shape[0]
    return round(same / total, 4) if total else None


def describe(a: OnnxAgreement) -> str:
    """The agreement record in one line (printed after the build)."""
    if not a.checked:
        return f"not compared with the SavedModel ({a.reason})"
    parts = [f"max abs error {a.max_abs_error:.3g}" if a.max_abs_error is not None else "NaN/Inf outputs"]
    parts += [f"top-1 agreement {a.top1_agreement:.1%}"] if a.top1_agreement is not None else []
    return f"ONNX Runtime vs the SavedModel on {a.samples} {a.inputs} samples: {', '.join(parts)}" + (
        " (within float rounding)" if a.ok else ""
    )
