"""``edgetool train``: train the bundled digits CNN under a tf.distribute strategy."""

from __future__ import annotations

from pathlib import Path

import typer

from edge_tool.training.config import Strategy

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
    output: Path = typer.Option(
        ...,
        "-o",
        "--output",
        help="Directory for the SavedModel (+ labels.txt, eval.npz, calibration.npz, train.json).",
    ),
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
    epochs: int = typer.Option(12, "--epochs", help="Training epochs."),
    batch_size: int = typer.Option(64, "--batch-size", help="Global batch size (split across replicas)."),
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
    """Train a small CNN on bundled real digits under a distribution strategy and export a SavedModel."""
    from edge_tool.errors import UsageError, collect_and_raise
    from edge_tool.training.config import TrainConfig
    from edge_tool.training.runner import train

    problems = _check_flag_fit(strategy, replicas, workers)
    try:
        config = TrainConfig(
            output_dir=output,
            strategy=strategy,
            replicas=2 if replicas is None else replicas,
            workers=2 if workers is None else workers,
            epochs=epochs,
            batch_size=batch_size,
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

    typer.echo(
        visible(
            f"trained under {result.strategy} ({how}) in {result.seconds:.1f}s; "
            f"held-out accuracy {result.eval_accuracy:.4f}; {where}"
        )
    )
