"""The report files of ``edgetool eval`` (--json / --markdown / --html): checked before anything is measured,
written atomically after."""

from __future__ import annotations

from pathlib import Path

from edge_tool.core.fsutil import atomic_file, check_output_file
from edge_tool.errors import UsageError, collect_and_raise
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.html_report import render
from edge_tool.evaluate.report import Report


def check_outputs(config: EvalConfig) -> None:
    """UsageError naming every report path that exists (without --force) or would overwrite an input."""
    problems = []
    for path in config.report_paths.values():
        try:
            check_output_file(path, config.force, config.inputs)
        except UsageError as exc:
            problems.append(str(exc))
    collect_and_raise(problems, UsageError)


def write_reports(report: Report, config: EvalConfig, failing: set[str]) -> list[Path]:
    """Write the --json / --markdown / --html files asked for (atomically); return their paths."""
    renderers = {"json": report.to_json, "markdown": report.to_markdown, "html": lambda: render(report, failing)}
    written = []
    for kind, path in config.report_paths.items():
        text = renderers[kind]()
        with atomic_file(path, config.force, config.inputs) as tmp:
            tmp.write_text(text, encoding="utf-8")
        written.append(path)
    return written
