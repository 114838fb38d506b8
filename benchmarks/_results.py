"""Shared by benchmark scripts: machine description and section-wise updates of benchmarks/RESULTS.md."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = "# Benchmark results\n\nEach section is written by the script named in it; rerun that script to refresh it.\n"


def machine() -> str:
    """One line describing the CPU, core count and Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section ``name`` of RESULTS.md with ``body``."""
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    block = f"<!-- {name}:start -->\n{body.rstrip()}\n<!-- {name}:end -->"
    pattern = re.compile(rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)


def table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def simd_flags() -> str:
    """The CPU's vector extensions that matter for these kernels (from /proc/cpuinfo), e.g. "avx2 fma avx512f"."""
    wanted = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return " ".join(f for f in wanted if f in have) or "none of " + " ".join(wanted)
    except OSError:
        pass
    return "unknown"


def load_line() -> str:
    """The 1/5/15-minute load averages and the CPU count, e.g. "load 3.2 / 2.9 / 2.1 on 2 CPUs"."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} CPUs"
