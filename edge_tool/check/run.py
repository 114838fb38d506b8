"""``run_check``: every requested target on one model or artefact, and the report (JSON and terminal text)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console

from edge_tool.calibration.serial import Record
from edge_tool.check.base import TargetResult, Verdict
from edge_tool.check.subject import classify
from edge_tool.check.synthetic import NOTE
from edge_tool.check.targets import TARGETS, parse_targets
from edge_tool.contract.options import ContractOptions
from edge_tool.core.env import quiet_native_stderr
from edge_tool.core.textsafe import term
from edge_tool.device.url import DeviceURL
from edge_tool.errors import UsageError


@dataclass(frozen=True)
class CheckConfig:
    """What to check (a model or artefact), against which targets, with which calibration data for int8 builds."""

    model: Path
    targets: tuple[str, ...]
    calibration: Path | None = None
    device: str | None = None  # ssh:// URL: the targets with an ``on_device`` check run there
    trust_model_code: bool = False  # --trust-model-code: check a model that carries code (edge_tool.trust)
    contract: ContractOptions = ContractOptions()  # --input-*: how image calibration data becomes model input
    signature: str | None = None  # --signature: the SavedModel signature checked (None: serving_default)
    device_url: DeviceURL | None = field(default=None, init=False, repr=False, compare=False)  # device, parsed

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", Path(self.model))
        object.__setattr__(self, "targets", parse_targets(self.targets))
        if self.device is not None:  # UsageError (exit 2) for anything but ssh://[user@]host[:port][?python=]
            object.__setattr__(self, "device_url", DeviceURL.parse(self.device))


@dataclass(frozen=True)
class CheckReport(Record):
    """One TargetResult per requested target, and the targets whose verdict is ``fails`` (``failed``, derived)."""

    schema: str = field(default="edgetool.check/1", init=False)
    model: str
    kind: str
    results: tuple[TargetResult, ...]
    failed: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "failed", tuple(r.target for r in self.results if r.verdict is Verdict.FAILS))

    def to_json(self) -> str:
        """Pretty JSON."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def run_check(config: CheckConfig) -> CheckReport:
    """Check ``config.model`` on each target; UsageError-family errors (exit 2) for bad input."""
    subject = classify(config.model, config.calibration, config.trust_model_code, config.signature)
    subject.contract = config.contract
    targets = TARGETS
    if subject.kind == "tfjs" and set(config.targets) != {"tfjs"}:
        raise UsageError(
            f"{config.model} is a TFJS graph model; only --target tfjs can check it (give the "
            "SavedModel to check the other targets)."
        )
    names = config.targets
    if subject.kind == "tflite" and "tfjs" in names and len(names) > 1:  # "all" on a .tflite: TF.js needs the source
        names = tuple(n for n in names if n != "tfjs")
        Console(highlight=False, soft_wrap=True).print(
            "note: target tfjs skipped: TF.js runs a graph model converted from the SavedModel or Keras file, not a "
            ".tflite (litertjs runs the .tflite in the browser)."
        )
    results = []
    try:
        with quiet_native_stderr():
            for name in names:
                on_device = targets[name].on_device if config.device else None
                results.append(on_device(subject, config.device_url) if on_device else targets[name].run(subject))
    finally:
        if subject.work is not None:
            shutil.rmtree(subject.work, ignore_errors=True)
    if subject.synthetic_calibration:
        results = [_synthetic(r) if targets[r.target].artefact in ("int8", "int8-b1") else r for r in results]
    return CheckReport(str(config.model), subject.kind, tuple(results))


def _synthetic(result: TargetResult) -> TargetResult:
    """``result`` of an int8 target whose build was calibrated on synthetic data, saying so."""
    return replace(result, method=f"{result.method}; {NOTE}", details={**result.details, "calibration": "synthetic"})


def print_report(report: CheckReport) -> None:
    """The terminal form: per target the verdict, then each finding; file-derived text printed verbatim."""
    console = Console(highlight=False, soft_wrap=True)
    colour = {Verdict.RUNS: "green", Verdict.PARTIAL: "yellow", Verdict.FAILS: "red"}
    console.print(f"edgetool check {term(report.model)} ({report.kind})")
    for r in report.results:
        console.print(f"[bold]{r.target:<11}[/] [{colour[r.verdict]}]{r.verdict.value}[/]  [dim]{term(r.method)}[/]")
        for f in r.findings:
            console.print(f"    {term(f.op)}: {f.status.value} — {term(f.reason)}")
        arena = r.details.get("tensor_arena")
        if arena:
            console.print(
                f"    tensor arena {arena['minimum_bytes']} bytes measured "
                f"(recommended {arena['recommended_bytes']}), flash {r.details['flash_bytes']} bytes"
            )
