"""Frozen configuration and result records for ``edgetool train``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from importlib.util import find_spec
from pathlib import Path

from edge_tool.calibration.serial import Record
from edge_tool.errors import below_minimum, collect_and_raise
from edge_tool.lm.tokenizer.bpe import EXTRA, MIN_VOCAB
from edge_tool.lm.tokenizer.registry import TOKENIZERS
from edge_tool.training.kinds import MODEL_NAMES

MAX_REPLICAS = 8
MAX_WORKERS = 8
DEFAULT_BPE_VOCAB = 1024
MAX_BPE_VOCAB = 32768


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
    model: str = "digits"  # a name in training.kinds.TRAINABLES
    text: Path | None = None  # lm: train on this UTF-8 text instead of the bundled one
    tokenizer: str = "byte"  # lm: a name in edge_tool.lm.tokenizer's TOKENIZERS
    vocab_size: int | None = None  # lm with --tokenizer bpe: the BPE's ids (default DEFAULT_BPE_VOCAB)
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
        object.__setattr__(self, "text", None if self.text is None else Path(self.text))
        problems = []
        if self.text is not None and self.model != "lm":
            problems.append(f"--text applies to --model lm only (got --model {self.model}).")
        elif self.text is not None and not self.text.is_file():
            problems.append(f"--text {self.text} is not a file; give a UTF-8 text file to train the LM on.")
        problems += self._tokenizer_problems()
        if self.model not in MODEL_NAMES:
            problems.append(f"--model must be one of {', '.join(MODEL_NAMES)}, got {self.model!r}.")
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

    def _tokenizer_problems(self) -> list[str]:
        if self.tokenizer not in TOKENIZERS:
            return [f"--tokenizer must be one of {', '.join(TOKENIZERS.names())}, got {self.tokenizer!r}."]
        if self.tokenizer != "byte" and self.model != "lm":
            return [f"--tokenizer applies to --model lm only (got --model {self.model})."]
        if self.vocab_size is not None and self.tokenizer != "bpe":
            return ["--vocab-size applies to --tokenizer bpe only (the byte tokenizer has 256 ids + specials)."]
        if self.vocab_size is not None and not MIN_VOCAB <= self.vocab_size <= MAX_BPE_VOCAB:
            return [f"--vocab-size must be {MIN_VOCAB}..{MAX_BPE_VOCAB} (every byte + 3 specials, then merges)."]
        if self.tokenizer == "bpe" and find_spec("tokenizers") is None:
            return [f"--tokenizer bpe trains with Hugging Face `tokenizers`, which is not installed: {EXTRA}."]
        return []

    @property
    def bpe_vocab(self) -> int:
        """The BPE's requested size (--vocab-size, or the default)."""
        return self.vocab_size or DEFAULT_BPE_VOCAB


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
    model: str = "digits"
    eval_perplexity: float | None = None  # lm: per token (a byte, or a BPE id), on the held-out chapters
    eval_bits_per_byte: float | None = None  # lm: the same loss per UTF-8 byte (comparable across tokenizers)
    sample: dict | None = None  # lm: {"prompt", "text", "temperature", "top_k", "seed"} generated by the SavedModel
