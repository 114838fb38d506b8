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
