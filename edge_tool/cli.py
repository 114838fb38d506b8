"""The Typer application: registers every command and turns EdgeToolError into exit codes.

Command modules under ``edge_tool.commands`` must stay light at import time
(no TensorFlow): ``edgetool --help`` has to be instant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import typer
from rich.console import Console
from rich.markup import escape

from edge_tool import __version__
from edge_tool.errors import EdgeToolError

err_console = Console(stderr=True)

app = typer.Typer(
    name="edgetool",
    help="Train with tf.distribute, convert to TFLite/TFJS, measure drift and latency, ship an offline PWA demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def cli_edge(func: Callable) -> Callable:
    """Wrap a command so an EdgeToolError prints one clear message and exits with its code."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except EdgeToolError as exc:
            kind = "budget exceeded" if exc.exit_code == 1 else "error"
            err_console.print(f"[bold red]{kind}:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"edgetool {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """edgetool: from a tf.distribute-trained model to TFLite, TFJS and a browser demo."""


def _register() -> None:
    from edge_tool.commands import registry  # noqa: PLC0415

    for name, func in registry.COMMANDS:
        app.command(name)(cli_edge(func))


_register()


def main() -> None:
    """Console-script entry point."""
    app()
