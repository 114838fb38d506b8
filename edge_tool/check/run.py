"""``run_check``: every requested target on one model or artefact, and the report (JSON and terminal text)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from edge_tool.check.base import TargetResult, Verdict
from edge_tool.check.registry import TARGET_NAMES
from edge_tool.contract.options import ContractOptions
from edge_tool.errors import UsageError


@dataclass(frozen=True)
class CheckConfig:
    """What to check (a model or artefact), against which targets, with which calibration data for int8 builds."""

    model: Path
    targets: tuple[str, ...]
    calibration: Path | None = None
    contract: ContractOptions = ContractOptions()  # --input-*: how image calibration data becomes model input

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", Path(self.model))
        targets = tuple(dict.fromkeys(TARGET_NAMES if "all" in self.targets else self.targets))
        bad = [t for t in targets if t not in TARGET_NAMES]
        if bad or not targets:
            raise UsageError(f"--target expects one or more of {', '.join(TARGET_NAMES)} or all, "
                             f"got {', '.join(bad) or 'none'}.")
        object.__setattr__(self, "targets", targets)


@dataclass(frozen=True)
class CheckReport:
    """One TargetResult per requested target."""

    model: str
    kind: str
    results: tuple[TargetResult, ...]

    @property
    def failed(self) -> list[str]:
        """Targets whose verdict is ``fails``."""
        return [r.target for r in self.results if r.verdict is Verdict.FAILS]

    def to_dict(self) -> dict:
        """JSON form."""
        return {"schema": "edgetool.check/1", "model": self.model, "kind": self.kind,
                "results": [r.to_dict() for r in self.results], "failed": self.failed}

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def run_check(config: CheckConfig) -> CheckReport:
    """Check ``config.model`` on each target; UsageError-family errors (exit 2) for bad input."""
    from edge_tool.check.targets import TARGETS  # noqa: PLC0415
    from edge_tool.check.subject import classify  # noqa: PLC0415
    from edge_tool.env import quiet_native_stderr  # noqa: PLC0415

    subject = classify(config.model, config.calibration)
    subject.contract = config.contract
    targets = TARGETS
    if subject.kind == "tfjs" and set(config.targets) != {"tfjs"}:
        raise UsageError(f"{config.model} is a TFJS graph model; only --target tfjs can check it (give the "
                         "SavedModel to check the other targets).")
    results = []
    try:
        with quiet_native_stderr():
            for name in config.targets:
                results.append(targets[name].run(subject))
    finally:
        if subject.work is not None:
            shutil.rmtree(subject.work, ignore_errors=True)
    return CheckReport(str(config.model), subject.kind, tuple(results))


def print_report(report: CheckReport) -> None:
    """The terminal form: per target the verdict, then each finding; file-derived text printed verbatim."""
    from rich.console import Console  # noqa: PLC0415
    from rich.markup import escape  # noqa: PLC0415

    console = Console(highlight=False, soft_wrap=True)
    colour = {Verdict.RUNS: "green", Verdict.PARTIAL: "yellow", Verdict.FAILS: "red"}
    console.print(f"edgetool check {escape(report.model)} ({report.kind})")
    for r in report.results:
        console.print(f"[bold]{r.target:<11}[/] [{colour[r.verdict]}]{r.verdict.value}[/]  "
                      f"[dim]{escape(r.method)}[/]")
        for f in r.findings:
            console.print(f"    {escape(f.op)}: {f.status.value} — {escape(f.reason)}")
        arena = r.details.get("tensor_arena")
        if arena:
            console.print(f"    tensor arena {arena['minimum_bytes']} bytes measured "
                          f"(recommended {arena['recommended_bytes']}), flash {r.details['flash_bytes']} bytes")
