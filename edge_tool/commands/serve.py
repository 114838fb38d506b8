"""``edgetool serve``: serve a demo site locally with the headers its wasm backend and service worker need."""

from __future__ import annotations

from pathlib import Path

import typer


def command(
    site: Path = typer.Argument(..., help="Site directory written by `edgetool demo`."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8000, "--port", help="Port to bind; 0 picks a free one."),
) -> None:
    """Serve a demo site over HTTP (COOP/COEP for wasm threads, correct MIME types); Ctrl-C stops it."""
    from edge_tool.core.textsafe import visible
    from edge_tool.demo.serve import serve_until_interrupted

    serve_until_interrupted(site, host, port, echo=lambda line: typer.echo(visible(line)))
