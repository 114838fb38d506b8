"""Frozen configuration and result records for ``edgetool train``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from edge_tool.calibration.serial import Record
from edge_tool.errors import below_minimum, collect_and_raise

MAX_REPLICAS = 8
MAX_WORKERS = 8


class Strategy(str, Enum):
    """Distribution strategies ``train`` can run under."""

    DEFAULT = "default"
    ONE_DEVICE = "one-device"
    MIRRORED = "mirrored"
    MULTIWORKER = "multiworker"
    PARAMETER_SERVER = "parameter-server"


@dataclass(frozen=True)
class TrainConfig(Record):
    """What to train and how; validated on construction (``to_dict``: the serializer's JSON form)."""

    output_dir: Path
    strategy: Strategy = Strategy.MIRRORED
    replicas: int = 2
    workers: int = 2
    epochs: int = 12
    batch_size: int = 64
    learning_rate: float = 3e-3
    seed: int = 0
    calibration_samples: int = 200
    force: bool = False
    verbose: bool = True
    peer_timeout: float = 120.0  # seconds a TF_CONFIG task waits for the other tasks (training.peers)

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "strategy", Strategy(self.strategy))
        problems = []
        if not 1 <= self.replicas <= MAX_REPLICAS:
            problems.append(f"--replicas must be between 1 and {MAX_REPLICAS}, got {self.replicas}.")
        if not 1 <= self.workers <= MAX_WORKERS:
            problems.append(
                f"--workers must be between 1 and {MAX_WORKERS} (each is a process/server on this "
                f"machine), got {self.workers}."
            )
        problems += below_minimum({"--epochs": (self.epochs, 1), "--batch-size": (self.batch_size, 1)})
        split = {Strategy.MIRRORED: self.replicas, Strategy.MULTIWORKER: self.workers}.get(self.strategy, 1)
        if 1 <= split <= max(MAX_REPLICAS, MAX_WORKERS) and 1 <= self.batch_size < split:
            problems.append(
                f"--batch-size {self.batch_size} cannot be split across {split} replicas; "
                f"use a global batch of at least {split}."
            )
        if not self.peer_timeout > 0:
            problems.append(f"--peer-timeout must be > 0 seconds, got {self.peer_timeout}.")
        if not self.learning_rate > 0:
            problems.append(f"learning rate must be > 0, got {self.learning_rate}.")
        collect_and_raise(problems, header="Invalid training options:")


@dataclass(frozen=True)
class TrainResult:
    """What a training run produced."""

    output_dir: Path
    strategy: str
    num_replicas: int
    eval_accuracy: float
    epochs: int
    seconds: float
    history: tuple[dict, ...] = field(default_factory=tuple)
    detail: str = ""  # e.g. "2 worker processes" / "2 workers + 1 ps (in-process)"
    wrote_output: bool = True  # False for a non-chief multiworker task joined via TF_CONFIG
