"""``edgetool eval``: accuracy drift against the SavedModel and latency (LiteRT, TFLM, TFJS, ONNX Runtime), with a CI gate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edge_tool.commands import input_options, panels
from edge_tool.commands.options import CUSTOM_OBJECTS, trust_model_code_option, use_custom_objects
from edge_tool.evaluate.runtimes import HOST, RuntimeChoice
from edge_tool.tasks import TASKS, TaskName

MAX_DROP_HELP = (
    "Fail (exit 1) if the task's main metric ("
    + ", ".join(t.main_metric + (f" in {t.main_unit}" if t.main_unit else "") for t in TASKS.values())
    + ") drops more than this (0.01 = 1 point)."
)
TASK_HELP = "What the outputs are (default: inferred from the model's outputs and the labels; the report says how)."
DEFAULT_RUNTIME = next(iter(RuntimeChoice))  # the default runtime comes first
RUNTIME_HELP = (
    "Which runtime runs the formats several can run: "
    + "; ".join(
        f"{r.value} ({HOST[r.value].summary}{', the default' if HOST[r.value].default else ''})" for r in RuntimeChoice
    )
    + ". TFJS runs in Node, .onnx in ONNX Runtime (docs/eval.md's runtime table)."
)


def command(
    artifacts: list[Path] = typer.Argument(
        ...,
        help="Artefacts: .tflite files (from any tool), TFJS model dirs and .onnx files (ONNX Runtime, the onnx extra).",
    ),
    reference: Path = typer.Option(
        ...,
        "--reference",
        "-r",
        help="Reference model: SavedModel directory (serving_default) or .keras/.h5 file (read as convert reads it).",
        rich_help_panel=panels.DATA,
    ),
    data: Path | None = typer.Option(
        None,
        "--data",
        "-d",
        help="Eval data, e.g. .npz with x (and y for accuracy); --task lm takes --text instead.",
        rich_help_panel=panels.DATA,
    ),
    threads: int = typer.Option(1, "--threads", help="LiteRT interpreter threads.", rich_help_panel=panels.RUNTIME),
    warmup: int = typer.Option(10, "--warmup", help="Untimed calls before timing.", rich_help_panel=panels.RUNTIME),
    runs: int | None = typer.Option(
        None, "--runs", help="Timed calls per model (default 100).", rich_help_panel=panels.RUNTIME
    ),
    text: Path | None = typer.Option(
        None,
        "--text",
        help="--task lm: a held-out UTF-8 text (perplexity, agreement, drift; docs/lm.md).",
        rich_help_panel=panels.LM,
    ),
    prompts: Path | None = typer.Option(
        None,
        "--prompts",
        help="--task lm: prompts to continue, one per line (default: slices of --text).",
        rich_help_panel=panels.LM,
    ),
    time_budget: float | None = typer.Option(
        None,
        "--time-budget",
        help="Seconds of timed calls per model (instead of --runs).",
        rich_help_panel=panels.RUNTIME,
    ),
    max_drop: float | None = typer.Option(None, "--max-drop", help=MAX_DROP_HELP, rich_help_panel=panels.BUDGETS),
    max_error: float | None = typer.Option(
        None,
        "--max-error",
        help="Fail (exit 1) if any output differs from the reference's by more than this (max abs error; e.g. for regression).",
        rich_help_panel=panels.BUDGETS,
    ),
    task: Annotated[TaskName | None, typer.Option("--task", help=TASK_HELP, rich_help_panel=panels.TASK)] = None,
    threshold: float = typer.Option(
        0.5,
        "--threshold",
        help="Decision threshold for multi-label outputs and one-channel masks.",
        rich_help_panel=panels.TASK,
    ),
    keypoint_order: str = typer.Option(
        "xy",
        "--keypoint-order",
        help="--task keypoints: the labels' coordinate order, xy (x, y: most datasets) or yx (row, column).",
        rich_help_panel=panels.TASK,
    ),
    max_latency_ms: float | None = typer.Option(
        None, "--max-latency-ms", help="Fail (exit 1) if a .tflite p50 exceeds this.", rich_help_panel=panels.BUDGETS
    ),
    runtime: Annotated[
        RuntimeChoice, typer.Option("--runtime", help=RUNTIME_HELP, rich_help_panel=panels.RUNTIME)
    ] = DEFAULT_RUNTIME,
    max_arena_kb: float | None = typer.Option(
        None,
        "--max-arena-kb",
        help="--runtime tflm: fail (exit 1) if a measured tensor arena exceeds this many KiB.",
        rich_help_panel=panels.BUDGETS,
    ),
    max_flash_kb: float | None = typer.Option(
        None,
        "--max-flash-kb",
        help="--runtime tflm: fail (exit 1) if a model's flash (array) size exceeds this many KiB.",
        rich_help_panel=panels.BUDGETS,
    ),
    batch_size: int = typer.Option(
        16,
        "--batch-size",
        help="Samples per streamed batch (memory grows with the batch, not the data).",
        rich_help_panel=panels.DATA,
    ),
    per_layer: bool = typer.Option(
        False,
        "--per-layer",
        help="Worst quantized layers of int8 artefacts (QuantizationDebugger).",
        rich_help_panel=panels.RUNTIME,
    ),
    top_k: int = typer.Option(
        5,
        "--top-k",
        help="Also report top-k accuracy when the model has more than k classes.",
        rich_help_panel=panels.DATA,
    ),
    json_path: Path | None = typer.Option(
        None, "--json", help="Write the JSON report here.", rich_help_panel=panels.REPORTS
    ),
    markdown_path: Path | None = typer.Option(
        None, "--markdown", help="Write the Markdown table here.", rich_help_panel=panels.REPORTS
    ),
    html_path: Path | None = typer.Option(
        None, "--html", help="Write a self-contained HTML report here.", rich_help_panel=panels.REPORTS
    ),
    device: list[str] = typer.Option(
        [],
        "--device",
        help="Also run each .tflite on this device over SSH: ssh://[user@]host[:port][?python=PATH] (repeatable; see docs/device.md).",
        rich_help_panel=panels.RUNTIME,
    ),
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="The model's class labels, one per line (default: labels.txt in or beside the reference, else an artefact's embedded labels); image-folder classes are matched to them by name.",
        rich_help_panel=panels.DATA,
    ),
    input_range: str = input_options.INPUT_RANGE,
    input_mean: str = input_options.INPUT_MEAN,
    input_std: str = input_options.INPUT_STD,
    signature: str | None = typer.Option(
        None,
        "--signature",
        help="Signature of the reference SavedModel to compare with (default serving_default; eval names the one used when there are several).",
        rich_help_panel=panels.DATA,
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Overwrite existing report files (never an input: a report path may not be, or lie inside, an artefact, the reference or the data).",
        rich_help_panel=panels.REPORTS,
    ),
    trust_model_code: bool = trust_model_code_option(),
    custom_objects: list[str] | None = CUSTOM_OBJECTS,
) -> None:
    """Measure accuracy drift and latency of converted models against the reference.

    Exit 1 (after writing the reports) on a broken budget or when an artefact does not run in its runtime.
    """
    from edge_tool.contract.options import ContractOptions
    from edge_tool.evaluate import EvalConfig
    from edge_tool.evaluate.outputs import check_outputs

    config = EvalConfig(
        artifacts=tuple(artifacts),
        reference=reference,
        data=data,
        threads=threads,
        warmup=warmup,
        runs=runs,
        time_budget_s=time_budget,
        max_drop=max_drop,
        max_latency_ms=max_latency_ms,
        per_layer=per_layer,
        top_k=top_k,
        task=task.value if task else None,
        threshold=threshold,
        keypoint_order=keypoint_order,
        max_error=max_error,
        batch_size=batch_size,
        runtime=runtime.value,
        max_arena_kb=max_arena_kb,
        max_flash_kb=max_flash_kb,
        json_path=json_path,
        markdown_path=markdown_path,
        html_path=html_path,
        force=force,
        devices=tuple(device),
        trust_model_code=trust_model_code,
        labels=labels,
        contract=ContractOptions.from_cli(input_range, input_mean, input_std),
        signature=signature,
        text=text,
        prompts=prompts,
    )
    check_outputs(config)  # the report paths, before any import of TensorFlow or of the user's modules
    _start_latency_processes(config)
    use_custom_objects(custom_objects, trust_model_code)
    from edge_tool.core.textsafe import visible
    from edge_tool.errors import ArtifactsFailed, BudgetExceeded
    from edge_tool.evaluate.budgets import budget_violations, failures
    from edge_tool.evaluate.lm_eval import is_lm_reference
    from edge_tool.evaluate.outputs import write_reports
    from edge_tool.keras_files import run_eval_any
    from edge_tool.models.signatures import signature_note

    lm = text is not None or (task is not None and task.value == "lm") or is_lm_reference(reference)
    if not lm and (note := signature_note(reference, signature)):
        typer.echo(visible(f"reference {note}"))
    from edge_tool.core.env import quiet_native_stderr

    with quiet_native_stderr():
        report = run_eval_any(config)
    violations, broken = budget_violations(report, config), failures(report)
    failing = {artifact for artifact, _ in violations + broken}
    _print_table(report, failing)
    for path in write_reports(report, config, failing):
        typer.echo(visible(f"wrote {path}"))
    lines = []
    if broken:
        lines += [
            "the following artefacts could not be run (their rows say why; the others were measured):",
            *(msg for _, msg in broken),
        ]
    if violations:
        lines += ["the following artefacts break the eval budget:", *(msg for _, msg in violations)]
    if lines:
        raise (ArtifactsFailed if broken else BudgetExceeded)("\n".join(lines))


def _print_table(report, failing: set[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from edge_tool.core.textsafe import text
    from edge_tool.evaluate.report import NUMERIC

    table = Table(title="edgetool eval", title_justify="left")
    for h in report.headers():
        table.add_column(h, justify="right" if h in NUMERIC else "left", no_wrap=True)
    for i, row in enumerate(report.table_rows()):
        style = "bold" if i == 0 else ("red" if row[0] in failing else None)
        table.add_row(*map(text, row), style=style)
    wide = 130 + sum(c.width for c in report.extra_columns())
    console = Console(width=max(Console().width, wide))
    console.print(table)
    for line in report.footer_lines():
        console.print(text(line, "dim"), highlight=False, soft_wrap=True)
    from edge_tool.evaluate.lm_report import LM_HEADERS, is_lm, lm_rows

    if is_lm(report):
        lm = Table(title="language model", title_justify="left")
        for h in LM_HEADERS:
            lm.add_column(h, no_wrap=True)
        rows = lm_rows(report)
        for row in rows:
            lm.add_row(*map(text, row))
        widths = [max(len(h), *(len(r[i]) if i < len(r) else 0 for r in rows)) for i, h in enumerate(LM_HEADERS)]
        Console(width=max(Console().width, sum(widths) + 3 * len(widths) + 1)).print(lm)
    for r in report.results:
        if r.per_layer:
            console.print(text(f"worst quantized layers of {r.artifact} (rmse/scale):"), highlight=False)
            for e in r.per_layer:
                console.print(text(f"  {e.rmse_over_scale:7.3f}  {e.op_name:<16} {e.tensor_name}"), highlight=False)


def _start_latency_processes(config) -> None:
    """Start the .tflite latency processes before TensorFlow's import (see ``LatencyProcess.start_ahead``)."""
    from edge_tool.evaluate.latency import LatencyProcess

    if (
        config.runtime == "litert"
        and config.text is None
        and config.task != "lm"
        and config.timed
        and config.latency_in_subprocess
    ):
        LatencyProcess.start_ahead(
            sum(Path(a).suffix.lower() == ".tflite" and Path(a).is_file() for a in config.artifacts)
        )
