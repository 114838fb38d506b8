"""``check MODEL --device URL``: the litert-cpu and tflm verdicts from running the model on the device with the
runtime it has (litert-cpu: the same load/allocate/invoke probe as the host's ``check.litert_probe``; tflm: TFLite
Micro's interpreter allocating and invoking the int8 model there)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.targets.common import Unavailable, conversion_failed
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.device import answers
from edge_tool.evaluate.device.facts import device_record, missing_runtime, missing_tflm, runtime_usable
from edge_tool.evaluate.device.session import RunnerSession, model_bytes, sweep
from edge_tool.evaluate.device.transport import SshDevice
from edge_tool.evaluate.device.url import DeviceURL
from edge_tool.micro.tflm import GENEROUS_ARENA


def _probe_on_device(url: DeviceURL, path: Path, request: dict, runtime_key: str, missing) -> tuple[dict, dict]:
    """(the device's hello, its probe answer); a runner that died on the model (a runtime crash, the OOM killer)
    is the verdict, its temp dir swept; RuntimeFailure (exit 2) when the device cannot be asked."""
    device = SshDevice(url)
    try:
        device.open()
        session = RunnerSession(device)
        try:
            hello = session.hello[0]
            usable = runtime_usable(hello) if runtime_key == "runtime" else hello.get(runtime_key) is not None
            if not usable:
                raise RuntimeFailure(f"{url.name} cannot run this check: {missing(hello, url.python)}")
            session.send({"op": "load", "mode": "probe"}, blob=model_bytes(path))
            session.send({"op": "probe", **request})
            try:
                return hello, session.receive(answers.probed, activity=f"check of {path.name} on {url.name}")
            except RuntimeFailure as exc:
                if not (session.died and device.alive):
                    raise
                session.close(abort=True)
                sweep(device, session)
                return hello, {"ok": False, "error": str(exc)}
        finally:
            session.close()
    finally:
        device.close()


def _findings(answer: dict) -> list[Finding]:
    return [] if answer["ok"] else [Finding("(model)", Status.UNSUPPORTED, answer["error"].strip()[:800] or "failed")]


def litert_cpu_on_device(subject, url: DeviceURL) -> TargetResult:
    """litert-cpu, decided on the device; RuntimeFailure (exit 2) when the device cannot be asked."""
    try:
        path = subject.artefact("fp32")
    except Unavailable as exc:
        return conversion_failed("litert-cpu", subject, exc)
    hello, answer = _probe_on_device(url, path, {}, "runtime", missing_runtime)
    method = (
        f"load + allocate + invoke on {url.name} ({hello.get('machine')}, {hello['runtime']} "
        f"{hello.get('runtime_version')}) over ssh"
    )
    return target_result(
        "litert-cpu",
        path,
        _findings(answer),
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
    hello, answer = _probe_on_device(url, path, {"runtime": "tflm", "arena": arena}, "tflm", missing_tflm)
    method = f"allocate + invoke on {url.name} ({hello.get('machine')}, tflite-micro {hello['tflm']}) over ssh"
    facts = {**hello, "runtime": "tflite_micro", "runtime_version": hello["tflm"]}
    return target_result(
        "tflm", path, _findings(answer), method, {"tflite_micro": hello["tflm"], "device": device_record(url, facts)}
    )
