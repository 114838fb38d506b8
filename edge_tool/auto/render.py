"""How ``auto``'s decision is shown: decision.md, the terminal table, and the budget error that carries it."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from edge_tool.auto.result import AutoResult
from edge_tool.core.textsafe import md, md_row, text
from edge_tool.device.facts import describe
from edge_tool.errors import BudgetExceeded
from edge_tool.tasks.registry import get_task

TABLE_HEADERS = ["candidate", "size", "accuracy", "drop", "p50 ms", "in budget", "chosen", "float layers"]


def headers(result: AutoResult) -> list[str]:
    """TABLE_HEADERS with the task's main metric in place of accuracy."""
    return [result.metric if h == "accuracy" else h for h in TABLE_HEADERS]


def _percent(result: AutoResult) -> bool:
    return result.metric in get_task((result.task or {}).get("name", "classification")).percent


def short_layer(tensor_name: str) -> str:
    """Display form of a fused TFLite tensor name: its first component (``model/wide/MatMul;…`` → ``model/wide/MatMul``)."""
    return tensor_name.split(";", 1)[0]


def table_rows(result: AutoResult) -> list[list[str]]:
    """Display rows (shared by the terminal and Markdown tables)."""
    rows, pct = [], _percent(result)
    for c in result.candidates:
        acc = "—" if c.accuracy is None else f"{100 * c.accuracy:.2f}%" if pct else f"{c.accuracy:.4f}"
        drop = (
            "—" if c.accuracy_drop is None else f"{100 * c.accuracy_drop:+.2f} pt" if pct else f"{c.accuracy_drop:+.4f}"
        )
        lat = "—" if c.latency_ms_p50 is None else f"{c.latency_ms_p50:.3f}"
        size = "—" if c.size_bytes is None else f"{c.size_bytes / 1e3:.1f} kB"
        verdict = "failed" if c.failed else "yes" if c.meets_budget else "no"
        rows.append(
            [
                c.name,
                size,
                acc,
                drop,
                lat,
                verdict,
                "✔" if c.chosen else "",
                ", ".join(short_layer(n) for n in c.float_layers or ()),
            ]
        )
    return rows


def to_markdown(result: AutoResult) -> str:
    """decision.md: budget line, the table, the float layers."""
    cfg = result.config
    lines = [
        f"## edgetool convert --quant auto (objective {cfg.objective.value}, max drop {cfg.max_drop:g} = "
        f"{100 * cfg.max_drop:.2f} pt, {cfg.threads} thread(s))",
        "",
        "| " + " | ".join(headers(result)) + " |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    lines += [md_row(row) for row in table_rows(result)]
    verdict = (
        f"Chosen: **{md(result.chosen.name)}** ({md(result.chosen.path.name)}): {md(result.reason or '')}."
        if result.chosen
        else "No candidate meets the budget; all are under candidates/ for inspection."
    )
    board = [f"Measured on the device {md(measured_on(result))}.", ""] if result.device else []
    return "\n".join([*lines, "", *board, verdict, *[f"- {md(n)}" for n in result.all_notes()]]) + "\n"


def measured_on(result: AutoResult) -> str:
    """The --device board the candidates ran on: name, machine, runtime and version (and "emulated")."""
    d = result.device or {}
    runtime = " ".join(filter(None, (d.get("runtime"), d.get("runtime_version"))))
    return f"{describe(d)} with {runtime or 'no runtime'}" if d else "this host"


def budget_error(result: AutoResult) -> BudgetExceeded:
    """The exit-1 error when no candidate met the budget (or ``--require``); its message carries the table."""
    cfg = result.config
    where = f"every candidate is in {cfg.output_dir / 'candidates'}:\n{to_markdown(result)}"
    if cfg.require and all(c.failed for c in result.candidates):
        return BudgetExceeded(f"--require {cfg.require}: no candidate qualifies; {where}")
    scope = f"no {cfg.require} candidate (--require {cfg.require})" if cfg.require else "no candidate"
    return BudgetExceeded(
        f"{scope} keeps the {result.metric} drop within --max-drop {cfg.max_drop:g} "
        f"({100 * cfg.max_drop:.2f} pt); {where}"
    )


def print_result(result: AutoResult) -> None:
    """The decision table on the terminal."""
    cfg = result.config
    table = Table(
        title=text(
            f"edgetool convert --quant auto → {cfg.output_dir} (objective {cfg.objective.value}, "
            f"max drop {100 * cfg.max_drop:.2f} pt)"
        ),
        title_justify="left",
    )
    for h in headers(result):
        table.add_column(h, justify="right" if h in ("size", result.metric, "drop", "p50 ms") else "left", no_wrap=True)
    for row, c in zip(table_rows(result), result.candidates):
        table.add_row(*map(text, row), style="bold green" if c.chosen else (None if c.meets_budget else "red"))
    wide = Console(width=max(Console().width, 160))
    wide.print(table)
    if result.device:
        wide.print(text(f"measured on the device {measured_on(result)}", "bold"), highlight=False, soft_wrap=True)
    if result.chosen is not None and result.reason:
        wide.print(text(f"why {result.chosen.name}: {result.reason}", "bold"), highlight=False, soft_wrap=True)
    for note in result.all_notes():
        wide.print(text(note, "dim"), highlight=False, soft_wrap=True)
    wide.print(text(f"decision: {cfg.output_dir / 'decision.json'}"), highlight=False, soft_wrap=True)
