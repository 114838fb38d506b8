"""``edgetool device URL``: what a device offers before eval uses it (reachable? arch, cores, memory, Python, which
TFLite runtime, free disk), and the exact fix when something is missing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from edge_tool.device.facts import device_record, emulation_note, missing_runtime, runtime_usable
from edge_tool.device.session import RunnerSession
from edge_tool.device.transport import SshDevice
from edge_tool.device.url import DeviceURL
from edge_tool.errors import RuntimeFailure


@dataclass(frozen=True)
class DeviceProbe:
    """What the runner on the device said (``hello``), or why it could not be reached (``error``)."""

    url: DeviceURL
    hello: dict = field(default_factory=dict)
    error: str | None = None
    reachable: bool = True

    @property
    def ready(self) -> bool:
        """True when eval --device can run .tflite artefacts there: its runtime created and invoked an interpreter
        (``runtime_usable``), facts that parsed (an answer that did not is ``error``)."""
        return self.error is None and runtime_usable(self.hello)

    @property
    def fix(self) -> str | None:
        """What to do on the device before it is ready, or None."""
        if self.error is None and not runtime_usable(self.hello):
            return missing_runtime(self.hello, self.url.python)
        return None

    def to_dict(self) -> dict:
        """JSON form."""
        h = self.hello
        return {
            **device_record(self.url, h),
            "reachable": self.reachable,
            "error": self.error,
            "ready": self.ready,
            "fix": self.fix,
            "memory_bytes": h.get("memory_bytes"),
            "free_disk_bytes": h.get("free_disk_bytes"),
            "temp_dir": h.get("tmp"),
            "memory_available_bytes": h.get("memory_available_bytes"),
            "numpy": h.get("numpy"),
            "runtime_errors": h.get("runtime_errors", []),
            "runtime_broken": h.get("runtime_broken"),
            "executable": h.get("executable"),
            "sys_path": h.get("sys_path", []),
        }

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def lines(self) -> list[str]:
        """The text report, one fact per line."""
        if self.error:
            return [f"{self.url.name}: {'reachable over ssh, but' if self.reachable else 'unreachable —'} {self.error}"]
        h = self.hello
        runtime = f"{h['runtime']} {h.get('runtime_version')}" if h.get("runtime") else "none"
        if h.get("runtime_broken"):
            runtime += " (imports, but cannot run a model)"
        out = [
            f"{self.url.name}: reachable over ssh",
            f"  machine   {h.get('machine')} ({h.get('system')})",
            f"  cpu       {h.get('cpu')}, {h.get('cores')} cores",
            f"  memory    {_gib(h.get('memory_bytes'))}",
            f"  python    {h.get('python')} ({self.url.python}), numpy {h.get('numpy') or 'missing'}",
            f"  runtime   {runtime}",
            f"  free disk {_gib(h.get('free_disk_bytes'), 'unknown')} in {(h.get('tmp') or '?').rsplit('/', 1)[0]}",
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
        try:
            device.open()
        except RuntimeFailure as exc:
            return DeviceProbe(url, error=str(exc), reachable=False)
        session = RunnerSession(device)
        session.close()
        return DeviceProbe(url, session.hello[0])
    except RuntimeFailure as exc:
        return DeviceProbe(url, error=str(exc))
    finally:
        device.close()


def _gib(n: int | None, unknown: str = "unknown (no /proc on the device)") -> str:
    return unknown if n is None else f"{n / 2**30:.1f} GiB"
