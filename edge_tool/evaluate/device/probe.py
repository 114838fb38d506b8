"""``edgetool device URL``: what a device offers before eval uses it (reachable? arch, cores, memory, Python, which
TFLite runtime, free disk), and the exact fix when something is missing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.device.facts import device_record, emulation_note, missing_runtime
from edge_tool.evaluate.device.session import RunnerSession
from edge_tool.evaluate.device.transport import SshDevice
from edge_tool.evaluate.device.url import DeviceURL


@dataclass(frozen=True)
class DeviceProbe:
    """What the runner on the device said (``hello``), or why it could not be reached (``error``)."""

    url: DeviceURL
    hello: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ready(self) -> bool:
        """True when eval --device can run .tflite artefacts there."""
        return self.error is None and self.hello.get("runtime") is not None

    @property
    def fix(self) -> str | None:
        """What to do on the device before it is ready, or None."""
        if self.error is None and self.hello.get("runtime") is None:
            return missing_runtime(self.hello, self.url.python)
        return None

    def to_dict(self) -> dict:
        """JSON form."""
        h = self.hello
        return {
            **device_record(self.url, h),
            "reachable": self.error is None,
            "error": self.error,
            "ready": self.ready,
            "fix": self.fix,
            "memory_bytes": h.get("memory_bytes"),
            "free_disk_bytes": h.get("free_disk_bytes"),
            "temp_dir": h.get("tmp"),
            "numpy": h.get("numpy"),
            "runtime_errors": h.get("runtime_errors", []),
        }

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def lines(self) -> list[str]:
        """The text report, one fact per line."""
        if self.error:
            return [f"{self.url.name}: unreachable — {self.error}"]
        h, gib = self.hello, 2**30
        runtime = f"{h['runtime']} {h.get('runtime_version')}" if h.get("runtime") else "none"
        out = [
            f"{self.url.name}: reachable over ssh",
            f"  machine   {h.get('machine')} ({h.get('system')})",
            f"  cpu       {h.get('cpu')}, {h.get('cores')} cores",
            f"  memory    {(h.get('memory_bytes') or 0) / gib:.1f} GiB",
            f"  python    {h.get('python')} ({self.url.python}), numpy {h.get('numpy') or 'missing'}",
            f"  runtime   {runtime}",
            f"  free disk {(h.get('free_disk_bytes') or 0) / gib:.1f} GiB in {h.get('tmp', '').rsplit('/', 1)[0]}",
        ]
        note = emulation_note(device_record(self.url, h))
        if note:
            out.append(f"  note      {note}")
        out.append("  ready for eval --device" if self.ready else f"  not ready: {self.fix}")
        return out


def probe(url: DeviceURL) -> DeviceProbe:
    """Connect, start a runner, read its facts, end it (nothing left on the device)."""
    device = SshDevice(url)
    try:
        device.open()
        session = RunnerSession(device)
        session.close()
        return DeviceProbe(url, session.hello[0])
    except RuntimeFailure as exc:
        return DeviceProbe(url, error=str(exc))
    finally:
        device.close()
