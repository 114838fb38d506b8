"""``edgetool train``: train the bundled digits CNN under a tf.distribute strategy."""

from __future__ import annotations

from pathlib import Path

import typer

from edge_tool.training.config import Strategy


def command(
    output: Path = typer.Option(..., "-o", "--output", help="Directory for the SavedModel (+ labels.txt, eval.npz, calibration.npz)."),
    strategy: Strategy = typer.Option(Strategy.MIRRORED, "--strategy", help="tf.distribute strategy to train under."),
    replicas: int = typer.Option(2, "--replicas", help="Replicas for mirrored (CPU split into logical devices when there are no GPUs)."),
    workers: int = typer.Option(2, "--workers", help="Worker processes for multiworker / parameter-server."),
    epochs: int = typer.Option(12, "--epochs", help="Training epochs."),
    batch_size: int = typer.Option(64, "--batch-size", help="Global batch size (split across replicas)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the data split, shuffling and initialisation."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty output directory."),
) -> None:
    """Train a small CNN on bundled real digits under a distribution strategy and export a SavedModel."""
    from edge_tool.training.config import TrainConfig  # noqa: PLC0415
    from edge_tool.training.runner import train  # noqa: PLC0415

    config = TrainConfig(
        output_dir=output, strategy=strategy, replicas=replicas, workers=workers,
        epochs=epochs, batch_size=batch_size, seed=seed, force=force,
    )
    result = train(config)
    typer.echo(
        f"trained under {result.strategy} ({result.num_replicas} replica(s)) in {result.seconds:.1f}s; "
        f"held-out accuracy {result.eval_accuracy:.4f}; SavedModel at {result.output_dir}"
    )
