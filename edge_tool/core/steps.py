"""A step wrapper for long work: a progress line, timing, and a check that the output exists and is non-empty."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError

console = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class StepRecord:
    """Timing of one finished step."""

    name: str
    seconds: float = 0.0
    outputs: list[Path] = field(default_factory=list)


@contextlib.contextmanager
def step(name: str, quiet: bool = False) -> Iterator[StepRecord]:
    """Run a block under a spinner; afterwards every path in ``record.outputs`` must exist and be non-empty."""
    record = StepRecord(name)
    start = time.perf_counter()
    status = contextlib.nullcontext() if quiet or not console.is_terminal else console.status(f"{term(name)}…")
    with status:
        yield record
    record.seconds = time.perf_counter() - start
    for out in record.outputs:
        empty = out.is_dir() and not any(out.iterdir()) or out.is_file() and out.stat().st_size == 0
        if not out.exists() or empty:
            raise ConversionError(f"step {name!r} finished but its output {out} is missing or empty.")
    if not quiet:
        console.print(f"[green]✓[/] {term(name)} [dim]({record.seconds:.1f}s)[/]")
