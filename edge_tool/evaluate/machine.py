"""Where the numbers were measured: CPU model, cores, Python / TensorFlow / LiteRT versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from edge_tool.core.env import installed_version


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else platform.processor()."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """A JSON-ready description of this machine and the runtimes' versions."""
    try:
        import psutil  # noqa: PLC0415

        physical = psutil.cpu_count(logical=False)
        mem_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        physical, mem_gb = None, None
    return {
        "cpu": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": physical,
        "memory_gb": mem_gb,
        "os": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": installed_version("tensorflow"),
        "litert": installed_version("ai-edge-litert"),
    }
