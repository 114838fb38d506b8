"""What ``edgetool eval`` exits 1 for: artefacts that could not run, and budgets (--max-drop, --max-error,
--max-latency-ms, --max-arena-kb, --max-flash-kb) a row breaks, each with a message naming by how much."""

from __future__ import annotations

from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.report import Report

# a drop is a difference of two fractions measured on the same samples: 0.97 - 0.95 is 0.020000000000000018 in
# floating point, and a candidate exactly at --max-drop must not fail on that last bit
DROP_ROUNDING = 1e-9


def drop_within(drop: float, max_drop: float) -> bool:
    """True when ``drop`` (a fraction) is within the budget ``max_drop``, float rounding of the difference forgiven."""
    return drop <= max_drop + DROP_ROUNDING


def failures(report: Report) -> list[tuple[str, str]]:
    """(artifact, message) for every artefact that could not be run."""
    return [(r.artifact, f"{r.artifact}: {r.failed}") for r in report.results if r.failed]


def budget_violations(report: Report, config: EvalConfig) -> list[tuple[str, str]]:
    """(artifact, message) per broken budget: the task's main metric dropping more than --max-drop, an output
    error over --max-error, LiteRT p50 over --max-latency-ms."""
    main = (report.task or {}).get("main_metric", "accuracy")
    lines = []
    for r in report.results:
        drop = r.metric_drop if r.metric_drop is not None or r.metrics is not None else r.accuracy_drop
        if (
            config.max_drop is not None
            and drop is not None
            and not drop_within(drop, config.max_drop)
            and main == "perplexity"
        ):
            lines.append(
                (
                    r.artifact,
                    f"{r.artifact}: perplexity {100 * drop:+.3f} % against the reference's exceeds --max-drop "
                    f"{config.max_drop:g} ({100 * config.max_drop:.3f} %)",
                )
            )
        elif config.max_drop is not None and drop is not None and not drop_within(drop, config.max_drop):
            lines.append(
                (
                    r.artifact,
                    f"{r.artifact}: {main} drop {drop:.4f} ({100 * drop:.2f} pt) exceeds --max-drop "
                    f"{config.max_drop:g} ({100 * config.max_drop:.2f} pt) by "
                    f"{100 * (drop - config.max_drop):.2f} pt",
                )
            )
        if config.max_error is not None and r.max_abs_error is not None and r.max_abs_error > config.max_error:
            lines.append(
                (
                    r.artifact,
                    f"{r.artifact}: max abs error {r.max_abs_error:.6g} against the reference "
                    f"exceeds --max-error {config.max_error:g}",
                )
            )
        if (
            config.max_latency_ms is not None
            and r.format == "tflite"
            and r.latency is not None
            and r.latency.p50 > config.max_latency_ms
        ):
            lines.append(
                (
                    r.artifact,
                    f"{r.artifact}: p50 latency {r.latency.p50:.3f} ms exceeds --max-latency-ms "
                    f"{config.max_latency_ms:g} by {r.latency.p50 - config.max_latency_ms:.3f} ms",
                )
            )
    return lines + _micro_violations(report, config)


def _micro_violations(report: Report, config: EvalConfig) -> list[tuple[str, str]]:
    """--max-arena-kb / --max-flash-kb against the TFLM rows."""
    lines = []
    for r in report.results:
        if r.arena is None:
            continue
        for flag, limit, value, what in (
            ("--max-arena-kb", config.max_arena_kb, r.arena["minimum_bytes"], "tensor arena"),
            ("--max-flash-kb", config.max_flash_kb, r.flash_bytes, "flash"),
        ):
            if limit is not None and value / 1024 > limit:
                lines.append(
                    (
                        r.artifact,
                        f"{r.artifact}: {what} {value / 1024:.1f} KiB exceeds {flag} {limit:g} "
                        f"by {value / 1024 - limit:.1f} KiB",
                    )
                )
    return lines
