"""``edgetool check``: will this model run on a target? A CI gate (exit 1 when a requested target fails)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edge_tool.check.targets import ALL, TARGET_NAMES, TARGETS
from edge_tool.commands import input_options
from edge_tool.commands.options import CUSTOM_OBJECTS, each_of, trust_model_code_option, use_custom_objects

CALIBRATION_HELP = (
    f"Representative data for the int8 builds ({', '.join(n for n, s in TARGETS.items() if s.needs_calibration)}). "
    "Default: calibration.npz beside the model."
)
TARGET_HELP = (
    "; ".join(f"{name} = {spec.summary}" for name, spec in TARGETS.items())
    + f"; {ALL} = every target. Repeat the option or give a comma list. Default: {ALL}."
)


def command(
    model: Path = typer.Argument(..., help="SavedModel dir, .keras/.h5, a .tflite, or a TFJS graph-model dir."),
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            metavar="|".join((*TARGET_NAMES, ALL)),
            help=TARGET_HELP,
            callback=each_of(TARGET_NAMES, ALL),
        ),
    ] = None,
    calibration: Path = typer.Option(None, "--calibration", help=CALIBRATION_HELP),
    device: str | None = typer.Option(
        None,
        "--device",
        help="ssh://[user@]host[:port][?python=PATH]: decide litert-cpu by running the model on that device (docs/device.md).",
    ),
    signature: str | None = typer.Option(
        None,
        "--signature",
        help="SavedModel signature to check (default serving_default; check names the one used when there are several).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the machine-readable report (JSON) instead of text."),
    trust_model_code: bool = trust_model_code_option(),
    custom_objects: list[str] | None = CUSTOM_OBJECTS,
    input_range: str = input_options.INPUT_RANGE,
    input_mean: str = input_options.INPUT_MEAN,
    input_std: str = input_options.INPUT_STD,
) -> None:
    """List per target every op that will not run or will fall back, with the reason, and a verdict."""
    use_custom_objects(custom_objects, trust_model_code)
    from edge_tool.check.run import CheckConfig, print_report, run_check
    from edge_tool.contract.options import ContractOptions
    from edge_tool.errors import BudgetExceeded

    report = run_check(
        CheckConfig(
            model=model,
            targets=tuple(target or [ALL]),
            calibration=calibration,
            device=device,
            trust_model_code=trust_model_code,
            signature=signature,
            contract=ContractOptions.from_cli(input_range, input_mean, input_std),
        )
    )
    if json_out:
        typer.echo(report.to_json(), nl=False)
    else:
        print_report(report)
    if report.failed:
        raise BudgetExceeded(f"{model} will not run on: {', '.join(report.failed)}.")
