"""``check MODEL --device URL``: the litert-cpu and tflm verdicts from running the model on the device with the
runtime it has (litert-cpu: the same load/allocate/invoke probe as the host's ``check.litert_probe``; tflm: TFLite
Micro's interpreter allocating and invoking the int8 model there). The probing is the device's
(``device.programs.probe_model``); this module turns its answer into the targets' verdicts."""

from __future__ import annotations

from edge_tool.check import lm_cache
from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.lm_device import lm_on_device
from edge_tool.check.targets.common import Unavailable, conversion_failed
from edge_tool.device.facts import device_record
from edge_tool.device.programs import LITERT, TFLM, probe_model
from edge_tool.device.runtime_refusal import explain
from edge_tool.device.url import DeviceURL
from edge_tool.micro.tflm import GENEROUS_ARENA


def _findings(answer: dict, runtime: str = "") -> list[Finding]:
    if answer["ok"]:
        return []
    said = explain(answer["error"], runtime) or answer["error"].strip()[:800] or "failed"
    return [Finding("(model)", Status.UNSUPPORTED, said)]


def litert_cpu_on_device(subject, url: DeviceURL) -> TargetResult:
    """litert-cpu, decided on the device; RuntimeFailure (exit 2) when the device cannot be asked."""
    try:
        path = subject.artefact("fp32")
    except Unavailable as exc:
        return conversion_failed("litert-cpu", subject, exc)
    if lm_cache.is_lm(path):
        return lm_on_device(path, url)
    hello, answer = probe_model(url, path, LITERT, {})
    method = (
        f"load + allocate + invoke on {url.name} ({hello.get('machine')}, {hello['runtime']} "
        f"{hello.get('runtime_version')}) over ssh"
    )
    return target_result(
        "litert-cpu",
        path,
        _findings(answer, f"{hello['runtime']} {hello.get('runtime_version')}"),
        method,
        {"runtime": hello["runtime"], "device": device_record(url, hello)},
    )


def tflm_on_device(subject, url: DeviceURL) -> TargetResult:
    """tflm, decided by the device's TFLite Micro interpreter (the int8 model, a generous arena grown if needed)."""
    try:
        path = subject.artefact("int8")
    except Unavailable as exc:
        return conversion_failed("tflm", subject, exc)
    arena = max(GENEROUS_ARENA, 4 * path.stat().st_size)
    hello, answer = probe_model(url, path, TFLM, {"arena": arena})
    method = f"allocate + invoke on {url.name} ({hello.get('machine')}, tflite-micro {hello['tflm']}) over ssh"
    record = device_record(url, TFLM.facts(hello))
    return target_result("tflm", path, _findings(answer), method, {"tflite_micro": hello["tflm"], "device": record})
