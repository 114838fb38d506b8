"""``edgetool device URL``: what a device offers for ``eval --device``, and what to install when it lacks it."""

from __future__ import annotations

import typer


def command(
    url: str = typer.Argument(..., help="ssh://[user@]host[:port][?python=PATH] (see docs/device.md)."),
    json_out: bool = typer.Option(False, "--json", help="Print the machine-readable facts (JSON)."),
) -> None:
    """Reachable? Architecture, cores, memory, Python, TFLite runtime and free disk of a device over SSH.

    Exit 0 when the device can run .tflite models, 1 when it cannot (unreachable, or no runtime: the fix is
    printed), 2 for a URL that is not of the accepted form.
    """
    from edge_tool.core.textsafe import visible
    from edge_tool.device.probe import probe
    from edge_tool.device.url import DeviceURL
    from edge_tool.errors import DeviceNotReady

    result = probe(DeviceURL.parse(url))
    if json_out:
        typer.echo(result.to_json(), nl=False)
    else:
        for line in result.lines():
            typer.echo(visible(line))
    if not result.ready:
        raise DeviceNotReady(f"{result.url.name} cannot run .tflite models yet: {result.error or result.fix}")
