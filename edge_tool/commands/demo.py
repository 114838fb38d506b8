"""``edgetool demo``: an installable, offline PWA that runs the model in the browser."""

from __future__ import annotations

from pathlib import Path

import typer


def command(
    model: Path = typer.Argument(..., help="TFJS graph-model dir (model.json) or SavedModel dir (converted on the fly)."),
    output: Path = typer.Option(..., "-o", "--output", help="Directory for the static site (refused if it exists and is not empty, unless --force; a symbolic link is followed to its directory)."),
    labels: Path = typer.Option(None, "--labels", help="Class labels, one per line (default: labels.txt beside the model)."),
    title: str = typer.Option(None, "--title", help="Page and app title (default: 'edgetool demo: MODEL-DIR-NAME')."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory written by an earlier edgetool run (it holds a .edgetool-output marker); a directory edgetool did not write is never replaced, and no output may be or contain an input. Checked again right before the final swap: a folder that appears at -o while the run works is never replaced (exit 2)."),
    litert: bool = typer.Option(False, "--litert", help="Add LiteRT.js engines: fixed-batch-1 int8 and fp32 .tflite built from a SavedModel (or --tflite); the page picks the fastest engine."),
    tflite: Path = typer.Option(None, "--tflite", help="With --litert: run this fixed-batch-1 .tflite instead of building the int8 and fp32 ones."),
    calibration: Path = typer.Option(None, "--calibration", help="With --litert: representative data for the int8 build (default: calibration.npz beside the model)."),
    input_size: str = typer.Option(None, "--input-size", metavar="HxW", help="Size fed to image inputs whose height/width the model leaves open (default 224x224)."),
) -> None:
    """Build a static offline PWA (tfjs wasm/webgl/cpu; drawing pad/upload/camera for images, a form for other inputs; every output head shown)."""
    from edge_tool.demo.site import DemoConfig, build_site  # noqa: PLC0415

    report = build_site(DemoConfig(model=model, output=output, labels=labels, title=title, force=force,
                                   litert=litert, tflite=tflite, calibration=calibration,
                                   input_size=input_size))
    from edge_tool.textsafe import visible  # noqa: PLC0415

    typer.echo(visible(
        f"demo site ({report.input_kind} input, {len(report.files)} files, cache {report.cache_version}) "
        f"written to {report.site}; serve it with: edgetool serve {report.site}"
    ))
    typer.echo(f"site {report.total_bytes / 1e6:.1f} MB; a first visit downloads at most "
               f"{report.first_visit_bytes / 1e6:.1f} MB, {report.first_visit_gzip_bytes / 1e6:.1f} MB gzipped (the "
               "page, the model and the one wasm build the browser runs; another build is cached only when chosen)")
