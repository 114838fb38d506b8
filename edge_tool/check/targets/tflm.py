"""tflm: TensorFlow Lite for Microcontrollers — TFLM's own interpreter allocates and invokes the int8 model."""

from __future__ import annotations

from edge_tool.check.base import Finding, Status, TargetResult, Unavailable, target_result
from edge_tool.check.device_target import tflm_on_device
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import conversion_failed
from edge_tool.micro import tflm


def check(subject) -> TargetResult:
    """Ops TFLM has no kernel for, kernels that refuse the model's types, and the measured arena when it runs."""
    tflm.require_tflm()
    try:
        path = subject.artefact("int8")
    except Unavailable as exc:
        return conversion_failed("tflm", subject, exc)
    refused, _ = tflm.unsupported_ops(path)
    findings = [Finding(op, Status.UNSUPPORTED, why) for op, why in refused]
    details = {"tflite_micro": tflm.tflm_version()}
    if not findings:
        details["tensor_arena"] = tflm.measure_arena(path).to_dict()
        details["flash_bytes"] = path.stat().st_size
    method = "allocate + invoke in tflite-micro's Python interpreter (its op resolver registers every TFLM kernel)"
    return target_result("tflm", path, findings, method, details)


SPEC = TARGETS.register(
    TargetSpec(
        "tflm",
        "TensorFlow Lite for Microcontrollers (tflite-micro interpreter, reference kernels)",
        "int8",
        check,
        on_device=tflm_on_device,
    )
)
