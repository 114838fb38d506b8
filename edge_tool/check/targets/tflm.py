"""tflm: TensorFlow Lite for Microcontrollers — TFLM's own interpreter allocates and invokes the int8 model."""

from __future__ import annotations

from edge_tool.check.base import Finding, Status, TargetResult, Unavailable, target_result
from edge_tool.check.device_target import tflm_on_device
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import conversion_failed
from edge_tool.micro import tflm
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.tflite_model import summarize_tflite


def check(subject) -> TargetResult:
    """Ops TFLM has no kernel for, kernels that refuse the model's types, and the measured arena when it runs."""
    tflm.require_tflm()
    try:
        path = subject.artefact("int8")
    except Unavailable as exc:
        return conversion_failed("tflm", subject, exc)
    refused, _ = tflm.unsupported_ops(path)
    findings = [Finding(op, Status.UNSUPPORTED, _float64_reason(path, op, why)) for op, why in refused]
    details = {"tflite_micro": tflm.tflm_version()}
    if not findings:
        details["tensor_arena"] = tflm.measure_arena(path).to_dict()
        details["flash_bytes"] = path.stat().st_size
    method = "allocate + invoke in tflite-micro's Python interpreter (its op resolver registers every TFLM kernel)"
    return target_result("tflm", path, findings, method, details)


def _float64_reason(path, op: str, why: str) -> str:
    """``why``, led by the cause when the file takes float64 input: its CAST from float64 has no TFLM kernel."""
    if op != "CAST" or "float64" not in summarize_tflite(read_tflite(path)).input_dtypes:
        return why
    return (
        "the model's signature takes float64, so even its int8 file starts with a CAST from float64, which TFLite "
        "Micro has no kernel for; export the signature with float32 inputs (tf.TensorSpec(..., tf.float32)) and "
        f"cast inside if needed. TFLM says: {why}"
    )


SPEC = TARGETS.register(
    TargetSpec(
        "tflm",
        "TensorFlow Lite for Microcontrollers (tflite-micro interpreter, reference kernels)",
        "int8",
        check,
        on_device=tflm_on_device,
    )
)
