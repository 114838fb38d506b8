"""What ``auto`` measured and decided: one Candidate per file, the AutoResult, and decision.json (Decision)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.auto.config import AutoConfig
from edge_tool.calibration.serial import Record, spec
from edge_tool.schemas.document import Document

FILE = "decision.json"


def _file_name(path: Path | None) -> str | None:
    return path.name if path else None


def _file_path(d: dict) -> Path | None:
    """A decision.json entry's file, relative to the decision's directory (the others are in candidates/)."""
    file = d.get("file")
    return None if file is None else Path(file) if d.get("chosen") else Path("candidates") / file


_NONE = spec(omit="none")


@dataclass(frozen=True)
class Candidate(Record):
    """One measured candidate; numbers are those of ``edgetool eval`` on the same file. Written as a decision.json
    entry: ``file`` is the file name (the chosen one is in OUTDIR, the others in candidates/)."""

    name: str
    quant: str
    path: Path | None = field(metadata=spec("file", encode=_file_name, read=_file_path))
    size_bytes: int | None
    accuracy: float | None
    accuracy_drop: float | None
    latency_ms_p50: float | None
    meets_budget: bool
    chosen: bool = False
    float_layers: tuple[str, ...] | None = field(default=None, metadata=_NONE)
    failed: str | None = field(default=None, metadata=_NONE)  # why it did not convert or could not be measured

    @classmethod
    def failure(cls, name: str, reason: str, path: Path | None = None) -> Candidate:
        """A candidate that failed to convert (no file) or to run in evaluation (``path`` kept)."""
        return cls(
            name,
            name.split("-", 1)[0],
            path,
            path.stat().st_size if path and path.is_file() else None,
            None,
            None,
            None,
            False,
            failed=" ".join(reason.split()),
        )


def _with_task(d: Decision) -> bool:
    return d.task is not None


@dataclass(frozen=True)
class Decision(Document):
    """decision.json: the budget, the reference accuracy, every candidate and which one was chosen."""

    schema_name = "decision"
    file_name = FILE

    objective: str
    max_drop: float
    reference_accuracy: float | None
    threads: int
    chosen: str | None
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    # eval's task; the budget, ``accuracy`` and ``accuracy_drop`` are of its ``metric`` (both written with a task)
    task: str | None = field(default=None, metadata=_NONE)
    metric: str | None = field(default=None, metadata=spec(when=_with_task))
    reason: str | None = field(default=None, metadata=_NONE)  # one sentence: why the chosen one (policy.reason)
    require: str | None = field(default=None, metadata=_NONE)  # --require (e.g. integer-only)
    device: dict | None = field(default=None, metadata=_NONE)  # --device: the board measured on (its eval record)


@dataclass(frozen=True)
class AutoResult:
    """What ``auto`` decided and wrote."""

    config: AutoConfig
    candidates: tuple[Candidate, ...]
    reference_accuracy: float | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    task: dict | None = None  # eval's task (name, main_metric, reason, ...)
    reason: str | None = None  # why the chosen one (policy.reason); None when nothing met the budget
    device: dict | None = None  # --device: the board the candidates were measured on (evaluate's device record)

    @property
    def metric(self) -> str:
        """The metric the budget is on (the task's main metric; accuracy for classification)."""
        return (self.task or {}).get("main_metric", "accuracy")

    @property
    def chosen(self) -> Candidate | None:
        """The chosen candidate, or None when nothing met the budget."""
        return next((c for c in self.candidates if c.chosen), None)

    @property
    def decision(self) -> Decision:
        """The decision.json form."""
        cfg = self.config
        return Decision(
            cfg.objective.value,
            cfg.max_drop,
            self.reference_accuracy,
            cfg.threads,
            self.chosen.name if self.chosen else None,
            self.candidates,
            self.notes,
            None if self.task is None else self.task["name"],
            None if self.task is None else self.metric,
            self.reason,
            cfg.require,
            self.device,
        )

    def all_notes(self) -> list[str]:
        """Each failed candidate's reason, then the other notes."""
        return [f"{c.name} failed: {c.failed}" for c in self.candidates if c.failed] + list(self.notes)
