"""``edgetool demo``: an installable, offline PWA that runs the model in the browser."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from edge_tool.commands import input_options
from edge_tool.commands.options import CUSTOM_OBJECTS, trust_model_code_option, use_custom_objects
from edge_tool.demo.config import DEMO_TASKS

TASK_HELP = (
    "What the page shows the outputs as (default: inferred from the outputs' shapes and final activation, as eval "
    "does; the site's notes say how). lm: the language-model page (a .tflite with prefill/decode signatures, "
    "inferred from them): a prompt box streaming generated text."
)
DemoTask = enum.Enum("DemoTask", {name: name for name in DEMO_TASKS}, type=str)
DemoTask.__doc__ = "A demo --task value: an eval task, or lm."


def command(
    model: Path = typer.Argument(
        ..., help="TFJS graph-model dir (model.json), SavedModel dir or .keras/.h5 file (converted on the fly)."
    ),
    output: Path = typer.Option(
        ...,
        "-o",
        "--output",
        help="Directory for the static site (refused if it exists and is not empty, unless --force; a symbolic link is followed to its directory).",
    ),
    labels: Path = typer.Option(
        None, "--labels", help="Class labels, one per line (default: labels.txt beside the model)."
    ),
    title: str = typer.Option(None, "--title", help="Page and app title (default: 'edgetool demo: MODEL-DIR-NAME')."),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace an existing output directory written by an earlier edgetool run (it holds a .edgetool-output marker); a directory edgetool did not write is never replaced, and no output may be or contain an input. Checked again right before the final swap: a folder that appears at -o while the run works is never replaced (exit 2).",
    ),
    litert: bool = typer.Option(
        False,
        "--litert",
        help="Add LiteRT.js engines: fixed-batch-1 int8 and fp32 .tflite built from a SavedModel (or --tflite); the page picks the fastest engine.",
    ),
    tflite: Path = typer.Option(
        None,
        "--tflite",
        help="With --litert: run this fixed-batch-1 .tflite instead of building the int8 and fp32 ones.",
    ),
    calibration: Path = typer.Option(
        None,
        "--calibration",
        help="Image data: a labelled folder (one sub-folder per class) measures what the model's input takes when the model does not say, and names the classes when no labels are given; with --litert also the representative data of the int8 build (default: calibration.npz beside the model).",
    ),
    signature: str = typer.Option(
        None,
        "--signature",
        help="SavedModel signature the page runs (default serving_default; demo names the one used when there are several).",
    ),
    input_size: str = typer.Option(
        None,
        "--input-size",
        metavar="HxW",
        help="Size fed to image inputs whose height/width the model leaves open (default 224x224).",
    ),
    task: Annotated[DemoTask | None, typer.Option("--task", help=TASK_HELP)] = None,
    sample_rate: int = typer.Option(
        None,
        "--sample-rate",
        metavar="HZ",
        help="Sample rate of a waveform input [N, samples]: the page resamples uploaded WAV files to it (without it the page cannot know the rate and refuses uploads).",
    ),
    trust_model_code: bool = trust_model_code_option(),
    custom_objects: list[str] | None = CUSTOM_OBJECTS,
    input_range: str = input_options.INPUT_RANGE,
    input_mean: str = input_options.INPUT_MEAN,
    input_std: str = input_options.INPUT_STD,
) -> None:
    """Build a static offline PWA (tfjs wasm/webgl/cpu; drawing pad/upload/camera for images, a form for other inputs; every output head shown)."""
    use_custom_objects(custom_objects, trust_model_code)
    from edge_tool.contract.options import ContractOptions
    from edge_tool.core.env import quiet_native_stderr
    from edge_tool.core.textsafe import visible
    from edge_tool.demo.config import DemoConfig
    from edge_tool.demo.lm_site import build_lm_site, wants_lm_page
    from edge_tool.keras_files import build_site_any
    from edge_tool.models.signatures import signature_note

    if note := signature_note(model, signature):
        typer.echo(visible(note))
    with quiet_native_stderr():  # TensorFlow's and LiteRT's C++ log lines (fd 2); EDGETOOL_VERBOSE=1 shows them
        cfg = DemoConfig(
            model=model,
            output=output,
            labels=labels,
            title=title,
            force=force,
            litert=litert,
            tflite=tflite,
            calibration=calibration,
            input_size=input_size,
            trust_model_code=trust_model_code,
            contract=ContractOptions.from_cli(input_range, input_mean, input_std),
            signature=signature,
            task=task.value if task else None,
            sample_rate=sample_rate,
        )
        report = build_lm_site(cfg) if wants_lm_page(cfg) else build_site_any(cfg)
    for note in report.notes:
        typer.echo(visible(note))

    typer.echo(
        visible(
            f"demo site ({report.input_kind} input, {len(report.files)} files, cache {report.cache_version}) "
            f"written to {report.site}; serve it with: edgetool serve {report.site}"
        )
    )
    typer.echo(
        f"site {report.total_bytes / 1e6:.1f} MB; a first visit downloads at most "
        f"{report.first_visit_bytes / 1e6:.1f} MB, {report.first_visit_gzip_bytes / 1e6:.1f} MB gzipped (the "
        "page, the model and the one wasm build the browser runs; another build is cached only when chosen)"
    )
