"""One module per eval runtime, each registering its ``RuntimeSpec`` in ``registry.RUNTIMES`` at import.

The names below are the registry's derived views: the ``--runtime`` choices (``RUNTIME_CHOICES``,
``RuntimeChoice``), the runtime (and runner) of an artefact — on this host, and on each ``--device`` board where its
runtime runs there (``on_board``: the same runtime, another place) — the report's extra columns and footer lines, and
the runtime table of README.md and docs/eval.md (regenerate with ``python scripts/docs_tables.py``; checked by
tests/test_docs_tables.py).
"""

# each module registers itself; this order is RUNTIMES' order, and the order of the report's extra columns
from edge_tool.evaluate.runtimes import litert, tflm, tfjs, ort  # noqa: F401, I001
from enum import Enum

from edge_tool.device.facts import device_label
from edge_tool.device.fleet import Fleet, in_parallel, open_boards
from edge_tool.errors import UsageError
from edge_tool.evaluate.runtimes.registry import RUNTIMES, Column, RuntimeSpec

__all__ = [
    "HOST",
    "RUNTIMES",
    "RUNTIME_CHOICES",
    "Column",
    "RuntimeChoice",
    "RuntimeSpec",
    "check_runtime",
    "columns",
    "open_board_runners",
    "open_runner",
    "owner",
    "runtime_for",
    "runtime_table",
]

HOST = {name: spec for name, spec in RUNTIMES.items() if spec.open is not None}


def _choices() -> tuple[str, ...]:
    """Host runtimes that share a format with another (``--runtime`` picks between them), default first."""
    shared = [n for n, s in HOST.items() if any(f in o.formats for o in HOST.values() if o is not s for f in s.formats)]
    return tuple(sorted(shared, key=lambda n: not HOST[n].default))


RUNTIME_CHOICES = _choices()  # what --runtime accepts
# --runtime's choices as a str Enum, so Typer lists and validates them before any work
RuntimeChoice = Enum("RuntimeChoice", [(n.upper(), n) for n in RUNTIME_CHOICES], type=str, module=__name__)
RuntimeChoice.__doc__ = "A --runtime value: a host runtime sharing its formats with another (default first)."


def check_runtime(name: str) -> None:
    """UsageError unless ``name`` is one of the ``--runtime`` choices (EvalConfig built from Python, not the CLI)."""
    name = getattr(name, "value", name)
    if name not in RUNTIME_CHOICES:
        raise UsageError(f"--runtime expects one of {', '.join(RUNTIME_CHOICES)}, got {name!r}")


def runtime_for(fmt: str, chosen: str) -> RuntimeSpec:
    """The host runtime that runs artefacts of format ``fmt``: ``chosen`` when it runs them, else their default."""
    fmt = getattr(fmt, "value", fmt)
    if chosen in HOST and fmt in HOST[chosen].formats:
        return HOST[chosen]
    return next(s for s in HOST.values() if s.default and fmt in s.formats)


def open_runner(art, config, scratch, slot: int, threads: int):
    """The runner of artefact ``art``, from the runtime that runs its format (``runtime_for``)."""
    return runtime_for(art.format, config.runtime).open(art, config, scratch, slot, threads)


def open_board_runners(arts, labels: list[str], config, stack) -> list:
    """(runner, row label) for every artefact whose runtime runs on a board, on every ``--device`` (its runtime
    chosen as on this host), opened in parallel; connections and runners closed by ``stack``."""
    boards = open_boards(config.device_urls, stack)
    fleet = Fleet()
    pairs = [
        (art, label, board, spec)
        for board in boards
        for art, label in zip(arts, labels)
        if (spec := runtime_for(art.format, config.runtime)).on_board is not None
    ]
    runners = in_parallel(lambda p: p[3].on_board(p[0], config, p[2], fleet), pairs)
    for runner in runners:
        stack.push(lambda exc_type, *_, r=runner: r.close(abort=exc_type is not None))
    return [(runner, f"{label} @ {board.url.name}") for runner, (_, label, board, _) in zip(runners, pairs)]


def owner(row) -> RuntimeSpec | None:
    """The runtime that measured a report row (None for a row no registered runtime claims)."""
    return next((s for s in RUNTIMES.values() if s.claims(row)), None)


PLACE = Column("device", lambda r: device_label(r.device), reference=device_label(None), numeric=False, width=40)


def columns(results) -> list[Column]:
    """The extra columns of a report with these rows: those of every runtime that measured one of them, then where
    each row ran when one ran on a ``--device``."""
    place = [PLACE] if any(r.device is not None for r in results) else []
    return [c for s in RUNTIMES.values() if any(s.claims(r) for r in results) for c in s.columns] + place


def runtime_table() -> str:
    """The Markdown table of every runtime (what it runs, how it is chosen, its extra columns), from the registry."""
    rows = ["| runtime | runs | chosen by | report adds | install |", "|---|---|---|---|---|"]
    for name, spec in RUNTIMES.items():
        how = f"`--runtime {name}`" + (" (default)" if spec.default else "") if name in RUNTIME_CHOICES else "default"
        how += "; also on each `--device` board" if spec.on_board else ""
        adds = ", ".join(f"`{c.header}` column" for c in spec.columns) or "–"
        formats = ", ".join(f"`{f}`" for f in spec.formats)
        rows.append(
            f"| `{name}` | {formats}: {spec.summary} | {how} | {adds} | {f'`{spec.extra}`' if spec.extra else 'base'} |"
        )
    return "\n".join(rows) + "\n"
