"""What ``auto`` measured and decided: one Candidate per file, the AutoResult, and decision.json (Decision)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.auto.config import AutoConfig
from edge_tool.schemas import check, read_json

FILE = "decision.json"


@dataclass(frozen=True)
class Candidate:
    """One measured candidate; numbers are those of ``edgetool eval`` on the same file."""

    name: str
    quant: str
    path: Path | None
    size_bytes: int | None
    accuracy: float | None
    accuracy_drop: float | None
    latency_ms_p50: float | None
    meets_budget: bool
    chosen: bool = False
    float_layers: tuple[str, ...] | None = None
    failed: str | None = None  # one-line reason when it did not convert or could not be measured

    @classmethod
    def failure(cls, name: str, reason: str, path: Path | None = None) -> Candidate:
        """A candidate that failed to convert (no file) or to run in evaluation (``path`` kept)."""
        return cls(name, name.split("-", 1)[0], path, path.stat().st_size if path and path.is_file() else None,
                   None, None, None, False, failed=" ".join(reason.split()))

    def to_dict(self) -> dict:
        """decision.json entry (``file``: the file name; the chosen one is in OUTDIR, the others in candidates/)."""
        d = {"name": self.name, "quant": self.quant, "file": self.path.name if self.path else None,
             "size_bytes": self.size_bytes, "accuracy": self.accuracy, "accuracy_drop": self.accuracy_drop,
             "latency_ms_p50": self.latency_ms_p50, "meets_budget": self.meets_budget, "chosen": self.chosen}
        if self.float_layers is not None:
            d["float_layers"] = list(self.float_layers)
        if self.failed is not None:
            d["failed"] = self.failed
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Candidate:
        """From a validated decision.json entry; ``path`` is relative to the decision's directory."""
        path = None if d["file"] is None else Path(d["file"]) if d["chosen"] else Path("candidates") / d["file"]
        layers = d.get("float_layers")
        return cls(d["name"], d["quant"], path, d["size_bytes"], d["accuracy"], d["accuracy_drop"],
                   d["latency_ms_p50"], d["meets_budget"], d["chosen"],
                   tuple(layers) if layers is not None else None, d.get("failed"))


@dataclass(frozen=True)
class Decision:
    """decision.json: the budget, the reference accuracy, every candidate and which one was chosen."""

    objective: str
    max_drop: float
    reference_accuracy: float | None
    threads: int
    chosen: str | None
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    task: str | None = None    # eval's task; the budget, ``accuracy`` and ``accuracy_drop`` are of its ``metric``
    metric: str | None = None
    reason: str | None = None   # one sentence: why the chosen one (policy.reason)
    require: str | None = None  # --require (e.g. integer-only)

    def to_dict(self) -> dict:
        """decision.json content."""
        d = {"objective": self.objective, "max_drop": self.max_drop, "reference_accuracy": self.reference_accuracy,
             "threads": self.threads, "chosen": self.chosen, "candidates": [c.to_dict() for c in self.candidates],
             "notes": list(self.notes)}
        if self.task is not None:
            d.update({"task": self.task, "metric": self.metric})
        d.update({k: v for k, v in (("reason", self.reason), ("require", self.require)) if v is not None})
        return d

    @classmethod
    def from_dict(cls, d, what: str = FILE) -> Decision:
        """Validate ``d`` against the published schema and build; DataError naming ``what`` otherwise."""
        check(d, "decision", what)
        return cls(d["objective"], d["max_drop"], d["reference_accuracy"], d["threads"], d["chosen"],
                   tuple(Candidate.from_dict(c) for c in d["candidates"]), tuple(d["notes"]), d.get("task"),
                   d.get("metric"), d.get("reason"), d.get("require"))

    @classmethod
    def read(cls, path: Path) -> Decision:
        """Read and validate a decision.json (a possibly hostile file)."""
        return cls.from_dict(read_json(path, "decision"), str(path))


@dataclass(frozen=True)
class AutoResult:
    """What ``auto`` decided and wrote."""

    config: AutoConfig
    candidates: tuple[Candidate, ...]
    reference_accuracy: float | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    task: dict | None = None  # eval's task (name, main_metric, reason, ...)
    reason: str | None = None  # why the chosen one (policy.reason); None when nothing met the budget

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
        return Decision(cfg.objective.value, cfg.max_drop, self.reference_accuracy, cfg.threads,
                        self.chosen.name if self.chosen else None, self.candidates, self.notes,
                        None if self.task is None else self.task["name"], None if self.task is None else self.metric,
                        self.reason, cfg.require)

    def to_dict(self) -> dict:
        """decision.json content."""
        return self.decision.to_dict()

    def all_notes(self) -> list[str]:
        """Each failed candidate's reason, then the other notes."""
        return [f"{c.name} failed: {c.failed}" for c in self.candidates if c.failed] + list(self.notes)
