"""``edgetool train``: train a bundled model (``--model``: the digits CNN, or a byte-level LM) under a tf.distribute
strategy."""

from __future__ import annotations

from pathlib import Path

import typer

from edge_tool.lm.tokenizer.registry import TOKENIZERS
from edge_tool.training.config import DEFAULT_BPE_VOCAB, Strategy
from edge_tool.training.kinds import TRAINABLES

TrainModel = TRAINABLES.choices("TrainModel")
TokenizerName = TOKENIZERS.choices("TokenizerName")
_TOKENIZER_HELP = (
    "--model lm: "
    + "; ".join(f"{k.name}: {k.summary}" for k in TOKENIZERS.values())
    + " (bpe needs the lm extra: pip install 'edgetool\\[lm]')."
)
_KINDS = tuple(TRAINABLES.values())
_OUTPUT_HELP = "Directory for the output: " + "; ".join(f"{k.name}: {k.output_help}" for k in _KINDS) + "."
_MODEL_HELP = "What to train: " + "; ".join(f"{k.name}: {k.summary}" for k in _KINDS) + "."
_EPOCHS_HELP = "Training epochs. \\[default: " + ", ".join(f"{k.name} {k.epochs}" for k in _KINDS) + "]"
_BATCH_HELP = (
    "Global batch size (split across replicas). \\[default: "
    + ", ".join(f"{k.name} {k.batch_size}" for k in _KINDS)
    + "]"
)

_REPLICA_STRATEGIES = (Strategy.MIRRORED,)
_WORKER_STRATEGIES = (Strategy.MULTIWORKER, Strategy.PARAMETER_SERVER)


def _check_flag_fit(strategy: Strategy, replicas: int | None, workers: int | None) -> list[str]:
    problems = []
    if replicas is not None and strategy not in _REPLICA_STRATEGIES:
        problems.append(
            f"--replicas applies to --strategy mirrored only (got --strategy {strategy.value}); "
            "multiworker/parameter-server take --workers."
        )
    if workers is not None and strategy not in _WORKER_STRATEGIES:
        problems.append(
            f"--workers applies to --strategy multiworker or parameter-server only (got --strategy {strategy.value})."
        )
    return problems


def command(
    output: Path = typer.Option(..., "-o", "--output", help=_OUTPUT_HELP),
    model: TrainModel = typer.Option("digits", "--model", help=_MODEL_HELP),
    strategy: Strategy = typer.Option(Strategy.MIRRORED, "--strategy", help="tf.distribute strategy to train under."),
    replicas: int | None = typer.Option(
        None,
        "--replicas",
        help="Replicas for mirrored (CPU split into logical devices when there are no GPUs). \\[default: 2]",
        show_default=False,
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="multiworker: local worker processes (ignored when TF_CONFIG is set: this process joins that cluster); parameter-server: in-process workers. \\[default: 2]",
        show_default=False,
    ),
    epochs: int | None = typer.Option(None, "--epochs", help=_EPOCHS_HELP, show_default=False),
    batch_size: int | None = typer.Option(None, "--batch-size", help=_BATCH_HELP, show_default=False),
    text: Path | None = typer.Option(
        None,
        "--text",
        help="--model lm: train on this UTF-8 text file instead of the bundled one (every 20th blank-line block, or "
        "the last tenth of a short text, is held out and written to heldout.txt).",
    ),
    tokenizer: TokenizerName = typer.Option("byte", "--tokenizer", help=_TOKENIZER_HELP),
    vocab_size: int | None = typer.Option(
        None,
        "--vocab-size",
        help=f"--tokenizer bpe: the BPE's ids, specials included (the model's vocabulary is this rounded up to a "
        f"multiple of 8). \\[default: {DEFAULT_BPE_VOCAB}]",
        show_default=False,
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for the data split, shuffling and initialisation."),
    peer_timeout: float = typer.Option(
        120.0,
        "--peer-timeout",
        help="multiworker with TF_CONFIG: seconds to wait for every other task of the cluster to answer before giving up (exit 2, naming the silent host:port).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace an existing output directory written by an earlier edgetool run (it holds a .edgetool-output marker); a directory edgetool did not write is never replaced, and no output may be or contain an input. Checked again right before the final swap: a folder that appears at -o while the run works is never replaced (exit 2).",
    ),
) -> None:
    """Train a small CNN on bundled real digits (or, with --model lm, a language model on bundled text: byte-level, or --tokenizer bpe)
    under a distribution strategy and export a SavedModel."""
    from edge_tool.errors import UsageError, collect_and_raise
    from edge_tool.training.config import TrainConfig
    from edge_tool.training.runner import train

    problems = _check_flag_fit(strategy, replicas, workers)
    kind = TRAINABLES[model.value]
    try:
        config = TrainConfig(
            output_dir=output,
            model=kind.name,
            text=text,
            tokenizer=tokenizer.value,
            vocab_size=vocab_size,
            learning_rate=kind.learning_rate,
            strategy=strategy,
            replicas=2 if replicas is None else replicas,
            workers=2 if workers is None else workers,
            epochs=kind.epochs if epochs is None else epochs,
            batch_size=kind.batch_size if batch_size is None else batch_size,
            seed=seed,
            force=force,
            peer_timeout=peer_timeout,
        )
    except UsageError as exc:
        if not problems:
            raise
        problems += [line[2:] for line in str(exc).splitlines() if line.startswith("- ")]
    collect_and_raise(problems, header="Invalid training options:")
    result = train(config)
    how = f"{result.num_replicas} replica(s)" + (f"; {result.detail}" if result.detail else "")
    where = f"SavedModel at {result.output_dir}" if result.wrote_output else "the chief writes the SavedModel"
    from edge_tool.core.textsafe import visible

    metric = f"held-out accuracy {result.eval_accuracy:.4f}"
    if result.eval_perplexity is not None:
        metric = (
            f"held-out perplexity {result.eval_perplexity:.3f} per token, {result.eval_bits_per_byte:.3f} bits per byte "
            f"(next-token accuracy {result.eval_accuracy:.4f})"
        )
    typer.echo(
        visible(f"trained {result.model} under {result.strategy} ({how}) in {result.seconds:.1f}s; {metric}; {where}")
    )
    if result.sample:
        s = result.sample
        typer.echo(
            visible(
                f"sample (temperature {s['temperature']}, top-k {s['top_k']}, seed {s['seed']}), "
                f"generated by the SavedModel's prefill/decode signatures:\n{s['prompt']}{s['text']}"
            )
        )
