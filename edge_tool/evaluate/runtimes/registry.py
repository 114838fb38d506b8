"""The capability table of eval runtimes: each module under ``evaluate/runtimes`` registers its ``RuntimeSpec`` with
``RUNTIMES.register(spec)``.

A row says which artefact formats a runtime runs, how eval opens its runner for one artefact, whether it is the
default for its formats, which ``ArtifactResult`` fields only its rows fill, how to tell its rows in a report (also
one read back from JSON), and what it adds to the report: table columns, footer lines. Importing
``edge_tool.evaluate.runtimes`` fills it; its derived views (``--runtime`` choices, the runner for an artefact, the
report's extra columns, the runtime table of README.md and docs/eval.md) live there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edge_tool.core.registry import Registry


@dataclass(frozen=True)
class Column:
    """A report column a runtime's rows add: header, the cell of any row (theirs or not), the reference's cell."""

    header: str
    cell: Callable  # (ArtifactResult) -> str
    reference: str = "—"
    numeric: bool = True
    width: int = 10  # terminal columns the table needs for it


@dataclass(frozen=True)
class RuntimeSpec:
    """One eval runtime: what it runs, how its runner opens, what its rows add to the report."""

    name: str
    formats: tuple[str, ...]  # ArtifactFormat values it runs
    summary: str  # one line for docs and --help
    claims: Callable  # (ArtifactResult) -> bool: this row was measured by this runtime
    open: Callable | None = None  # (Artifact, EvalConfig, scratch, slot, threads) -> runner; host runtimes
    on_board: Callable | None = None  # (Artifact, EvalConfig, Board, Fleet) -> runner: the same rows on a --device
    default: bool = False  # runs its formats unless --runtime names another runtime of theirs
    shares_cores: bool = False  # its accuracy-pass worker takes turns on the cores with the reference's
    result_fields: tuple[str, ...] = ()  # ArtifactResult fields only its rows fill (None on every other row)
    columns: tuple[Column, ...] = ()  # table columns, shown when some row is its
    facts: Callable | None = None  # (results) -> footer lines, before the report's notes
    row_notes: bool = False  # each of its rows that ran: "artifact: runtime — latency_note." after the notes
    extra: str = ""  # the pip extra that installs it ("" when the base install has it)


RUNTIMES: Registry[RuntimeSpec] = Registry("runtime")
