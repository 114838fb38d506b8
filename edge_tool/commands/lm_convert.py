"""``convert``'s language-model path (``--task lm``, inferred from a model whose signatures follow the LM contract):
its own options, the options it refuses, and the run (``lm_converter``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edge_tool.commands import panels
from edge_tool.core.textsafe import visible
from edge_tool.errors import BudgetExceeded, ModesNotBuilt, UsageError

TASKS = ("lm",)
Task = Annotated[
    str | None,
    typer.Option(
        "--task",
        help="lm = a language model (prefill/decode signatures, docs/lm.md); inferred from the signatures.",
        rich_help_panel=panels.LM,
    ),
]
MaxLen = Annotated[
    int | None, typer.Option("--max-len", help="--task lm: the context (KV cache) length.", rich_help_panel=panels.LM)
]
PrefillLen = Annotated[
    str | None,
    typer.Option(
        "--prefill-len",
        help="--task lm: the prefill lengths to keep, e.g. 16,64 (default: all).",
        rich_help_panel=panels.LM,
    ),
]
MaxMemory = Annotated[
    float | None,
    typer.Option(
        "--max-memory",
        help="--task lm: MB the file plus its KV cache must fit in (refused otherwise).",
        rich_help_panel=panels.LM,
    ),
]
Litertlm = Annotated[
    bool,
    typer.Option(
        "--litertlm",
        help="--task lm: also pack each file with its tokenizer as a .litertlm.",
        rich_help_panel=panels.LM,
    ),
]


def is_lm(model: Path, task: str | None) -> bool:
    """True for ``--task lm``, a SavedModel whose signatures are named as the LM contract's, or a Keras-Hub CausalLM
    ``.keras`` file."""
    if task is not None and task not in TASKS:
        raise UsageError(f"--task takes {', '.join(TASKS)} (other tasks are read from the model), got {task!r}.")
    if task == "lm":
        return True
    from edge_tool.lm.contract import looks_like_lm
    from edge_tool.lm.keras_hub import is_hub_lm
    from edge_tool.models.signatures import saved_model_signatures

    return is_hub_lm(model) or (
        Path(model).is_dir()
        and (Path(model) / "saved_model.pb").is_file()
        and looks_like_lm(saved_model_signatures(Path(model)))
    )


def refused_options(given: dict) -> None:
    """UsageError naming the convert options an LM run does not take (``given``: option -> set?)."""
    bad = [name for name, on in given.items() if on]
    if bad:
        raise UsageError(
            f"{', '.join(bad)} do not apply to a language model (convert --task lm writes .tflite files with every "
            "prefill and decode signature, float I/O, no calibration); drop them."
        )


def lm_modes(quant: list[str] | None) -> tuple[str, ...]:
    """--quant values as LM mode names ('all' = every LM mode; none = fp32)."""
    from edge_tool.lm_converter.modes import LM_MODES

    raw = [v.strip().lower() for value in (quant or []) for v in value.split(",") if v.strip()]
    modes = [m for v in raw for m in (LM_MODES.names() if v == "all" else [v])]
    return tuple(dict.fromkeys(modes)) or ("fp32",)


def run_lm(model: Path, output: Path, quant, seed: int, force: bool, *lm_args, auto: bool, max_drop, text) -> None:
    """Convert a language model and print what was made; exit 1 when a requested mode was not built, or (--quant
    auto) when no quantized mode is within --max-drop."""
    from edge_tool.commands.convert_print import print_result
    from edge_tool.convert.lm_run import convert_lm
    from edge_tool.lm_converter.auto import choice_lines
    from edge_tool.lm_converter.config import LmConvertConfig
    from edge_tool.lm_converter.modes import LM_MODES

    max_len, prefill_len, max_memory, litertlm = lm_args
    if auto and max_drop is None:
        raise UsageError("--quant auto for a language model needs --max-drop (relative perplexity increase).")
    if not auto and max_drop is not None:
        raise UsageError("--max-drop belongs to --quant auto.")
    modes = LM_MODES.names() if auto else lm_modes(quant)
    config = LmConvertConfig(
        model,
        output,
        modes=modes,
        prefill_lengths=_lengths(prefill_len),
        max_len=max_len,
        max_memory_mb=max_memory,
        litertlm=litertlm,
        seed=seed,
        force=force,
        keep_going=len(modes) > 1,
        max_drop=max_drop if auto else None,
        text=text if auto else None,
    )
    result = convert_lm(config)
    print_result(result)
    choice = result.manifest.lm_choice
    if choice is not None:
        for line in choice_lines(list(result.artifacts), choice):
            print(visible(line))
        if choice["chosen"] is None:
            raise BudgetExceeded(f"No quantized mode kept perplexity within +{max_drop:.2%} of fp32's.")
    if result.failures and not auto:
        raise ModesNotBuilt(
            f"{len(result.failures)} of the requested modes could not be built ({', '.join(result.failures)}); the "
            f'others are written to {result.output_dir}, and manifest.json lists the missing ones under "failed".'
        )


def _lengths(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"--prefill-len takes comma-separated token counts, e.g. 16,64; got {text!r}.") from None
