"""``convert``'s ``--quant`` and ``--require``: choices and help derived from the mode registry and auto's
requirements, validated by Typer before the command runs (``Annotated`` types for the command's signature)."""

from __future__ import annotations

from typing import Annotated

import typer

from edge_tool.auto.config import REQUIREMENTS, Requirement
from edge_tool.commands import panels
from edge_tool.commands.options import each_of
from edge_tool.convert.modes import MODES, every_mode, named_modes, tflite_source_modes
from edge_tool.lm_converter.modes import LM_MODES

QUANT_WORDS = ("all", "auto")  # --quant values besides the modes


def _quant_help() -> str:
    """--quant help from the mode registry (light: the mode modules import no TensorFlow at load)."""
    modes = "; ".join(f"{name} = {spec.summary}" for name, spec in MODES.items())
    return (
        f"Quantization mode(s), repeated or a comma list: {modes}. "
        f"'all' = {', '.join(every_mode())} (plus qat with --train-data); a float .tflite MODEL takes "
        f"{', '.join(tflite_source_modes())} (ai-edge-quantizer); a language model (--task lm) "
        f"{', '.join(LM_MODES)}; 'auto' = the smallest/fastest within --max-drop on --eval-data (see --objective). "
        "Default: fp32, or all with --format all. A mode that cannot be built is reported 'not built: MODE "
        "(reason)' and the rest written: exit 0 when all were built (bare --format all: every mode that builds), "
        "1 when some were not, 2 when none was."
    )


QUANT_HELP = _quant_help()
REQUIRE_HELP = "--quant auto: " + "; ".join(f"{name} = consider {what}" for name, what in REQUIREMENTS.items()) + "."

Quant = Annotated[
    list[str] | None,
    typer.Option(
        "--quant",
        "-q",
        metavar="MODE",
        help=QUANT_HELP,
        callback=each_of(tuple(dict.fromkeys((*named_modes(), *LM_MODES))), *QUANT_WORDS),
        rich_help_panel=panels.MODES,
    ),
]
Require = Annotated[Requirement | None, typer.Option("--require", help=REQUIRE_HELP, rich_help_panel=panels.AUTO)]
