"""``check MODEL --device URL``: the litert-cpu verdict from loading, allocating and invoking the model on the device
with the runtime it has (the same probe as the host's ``check.litert_probe``, run there)."""

from __future__ import annotations

from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.targets.common import Unavailable, conversion_failed
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.device.facts import device_record, missing_runtime
from edge_tool.evaluate.device.session import RunnerSession, model_bytes
from edge_tool.evaluate.device.transport import SshDevice
from edge_tool.evaluate.device.url import DeviceURL


def litert_cpu_on_device(subject, url: DeviceURL) -> TargetResult:
    """litert-cpu, decided on the device; RuntimeFailure (exit 2) when the device cannot be asked."""
    try:
        path = subject.artefact("fp32")
    except Unavailable as exc:
        return conversion_failed("litert-cpu", subject, exc)
    device = SshDevice(url)
    try:
        device.open()
        session = RunnerSession(device)
        try:
            hello = session.hello[0]
            if hello.get("runtime") is None:
                raise RuntimeFailure(f"{url.name} cannot run .tflite models: {missing_runtime(hello, url.python)}")
            session.send({"op": "load", "mode": "probe"}, blob=model_bytes(path))
            session.send({"op": "probe"})
            answer = session.receive()[0]
        finally:
            session.close()
    finally:
        device.close()
    findings = [] if answer["ok"] else [Finding("(model)", Status.UNSUPPORTED,
                                                 answer["error"].strip()[:800] or "failed")]
    method = (f"load + allocate + invoke on {url.name} ({hello.get('machine')}, {hello['runtime']} "
              f"{hello.get('runtime_version')}) over ssh")
    return target_result("litert-cpu", path, findings, method,
                         {"runtime": hello["runtime"], "device": device_record(url, hello)})


# check targets that can run on a device: name -> check(subject, url)
DEVICE_TARGETS = {"litert-cpu": litert_cpu_on_device}
