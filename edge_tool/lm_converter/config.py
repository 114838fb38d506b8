"""``LmConvertConfig``: what ``edgetool convert --task lm`` was asked (validated on construction, every problem at
once), and the plan it implies for one contract model (which signatures, whether the cache fits the memory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.serial import Record
from edge_tool.errors import ModelError, UsageError, below_minimum, collect_and_raise
from edge_tool.lm.contract import LmContract
from edge_tool.lm_converter.modes import refusal

LITERTLM_EXTRA = "pip install 'edgetool[lm]'"


@dataclass(frozen=True)
class LmConvertConfig(Record):
    """A language model's convert run; ``to_dict`` is manifest.json's ``options``."""

    model: Path
    output_dir: Path
    modes: tuple[str, ...] = ("fp32",)
    task: str = field(default="lm", init=False)
    output_format: str = field(default="tflite", init=False)  # one multi-signature .tflite per mode
    prefill_lengths: tuple[int, ...] | None = None  # --prefill-len: a subset of the model's; None keeps them all
    max_len: int | None = None  # --max-len: must be the model's own (its cache shapes are fixed)
    max_memory_mb: float | None = None  # --max-memory: model file + KV cache must fit
    litertlm: bool = False  # --litertlm: also pack <stem>_<mode>.litertlm for LiteRT-LM
    seed: int = 0
    force: bool = False
    keep_going: bool = False
    max_drop: float | None = None  # --quant auto: relative perplexity increase allowed over fp32
    text: Path | None = None  # --quant auto: held-out text (UTF-8) the perplexity is measured on

    @property
    def auto(self) -> bool:
        """--quant auto: every LM mode built, the smallest within --max-drop chosen."""
        return self.max_drop is not None

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", Path(self.model))
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "modes", tuple(dict.fromkeys(str(getattr(m, "value", m)) for m in self.modes)))
        if self.prefill_lengths is not None:
            object.__setattr__(self, "prefill_lengths", tuple(sorted({int(t) for t in self.prefill_lengths})))
        if self.text is not None:
            object.__setattr__(self, "text", Path(self.text))
        problems = [p for p in map(refusal, self.modes) if p]
        if self.auto and (self.text is None or not self.text.is_file() or self.max_drop < 0):
            problems.append(
                "--quant auto for a language model needs --max-drop (relative perplexity increase, e.g. 0.01) >= 0 "
                f"and --eval-data: a UTF-8 held-out text file (got {self.text})."
            )
        if not self.modes:
            problems.append("no --quant mode given.")
        problems += below_minimum({"--max-len": (self.max_len or 1, 1), "--seed": (self.seed, 0)})
        if self.max_memory_mb is not None and self.max_memory_mb <= 0:
            problems.append(f"--max-memory must be a positive number of MB, got {self.max_memory_mb}.")
        if any(t < 1 for t in self.prefill_lengths or ()):
            problems.append(f"--prefill-len takes positive lengths, got {list(self.prefill_lengths)}.")
        collect_and_raise(problems, UsageError, header="Invalid convert options for a language model:")

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the output must stay clear of."""
        return (("model", self.model), ("held-out text", self.text))


def plan_lengths(config: LmConvertConfig, contract: LmContract) -> tuple[int, ...]:
    """The prefill lengths to convert; ModelError when --max-len/--prefill-len ask what the SavedModel cannot give."""
    problems = []
    if config.max_len is not None and config.max_len != contract.max_len:
        problems.append(
            f"--max-len {config.max_len} differs from the model's {contract.max_len}: a contract SavedModel's "
            f"endpoints have fixed cache shapes [1, {contract.max_len}, {contract.num_kv_heads}, {contract.head_dim}] "
            "and hold no Keras model to re-trace. Re-export the endpoints at that length from the Keras model "
            "(edge_tool.lm.export.export_lm with LmConfig(max_len=...)), then convert that SavedModel."
        )
    lengths = contract.prefill_lengths
    if config.prefill_lengths is not None:
        missing = [t for t in config.prefill_lengths if t not in lengths]
        if missing:
            problems.append(
                f"--prefill-len {', '.join(map(str, missing))}: the model has prefill signatures for "
                f"{', '.join(map(str, lengths))} only, and a fixed-length signature cannot be re-traced from a "
                "SavedModel. Pick among those, or re-export with edge_tool.lm.export.export_lm(model, out, "
                "prefill_lengths=...)."
            )
        lengths = tuple(t for t in lengths if t in config.prefill_lengths)
    collect_and_raise(problems, ModelError, header=f"Cannot convert {config.model} as asked:")
    return lengths


def memory_problem(config: LmConvertConfig, contract: LmContract, file_bytes: int | None = None) -> str | None:
    """Why the KV cache (plus the file, when ``file_bytes`` is given) does not fit --max-memory, or None."""
    if config.max_memory_mb is None:
        return None
    limit = config.max_memory_mb * 2**20
    need = contract.cache_bytes + (file_bytes or 0)
    if need <= limit:
        return None
    what = "its KV cache" if file_bytes is None else "the file plus its KV cache"
    return (
        f"{config.model} does not fit --max-memory {config.max_memory_mb:g} MB: {what} needs {need / 2**20:.2f} MB "
        f"(cache: 2 × {contract.num_layers} layers × [1, {contract.max_len}, {contract.num_kv_heads}, "
        f"{contract.head_dim}] float32 = {contract.cache_bytes / 2**20:.2f} MB). Way out: re-export with a shorter "
        "max_len or fewer key/value heads (edge_tool.lm.export), a smaller --quant mode, or a target with more memory."
    )
