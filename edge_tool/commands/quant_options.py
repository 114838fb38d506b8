"""``convert``'s ``--quant`` and ``--require``: choices and help derived from the mode registry and auto's
requirements, validated by Typer before the command runs (``Annotated`` types for the command's signature)."""

from __future__ import annotations

from typing import Annotated

import typer

from edge_tool.auto.config import REQUIREMENTS, Requirement
from edge_tool.commands import panels
from edge_tool.commands.options import each_of
from edge_tool.convert.modes import MODES, named_modes, tflite_source_modes
from edge_tool.lm_converter.modes import LM_MODES

QUANT_WORDS = ("all", "auto")  # --quant values besides the modes


def _quant_help() -> str:
    """--quant help from the mode registry (light: the mode modules import no TensorFlow at load)."""
    modes = "; ".join(f"{name} = {spec.summary}" for name, spec in MODES.items())
    return (
        f"Quantization mode(s): {modes}. Repeat the option or give a comma list; "
        "'all' = every mode that needs no training data (plus qat with --train-data; not the weight-* modes, "
        f"built when named); a float .tflite MODEL takes {', '.join(tflite_source_modes())} (ai-edge-quantizer); "
        "'auto' = the best candidate within --max-drop on --eval-data (see --objective). "
        f"A language model (--task lm, inferred): {', '.join(LM_MODES)} or auto within --max-drop of perplexity. "
        "Default: fp32, or all with --format all. A listed mode that cannot be built for this model is "
        "reported as 'not built: MODE (reason)' and the rest written: exit 0 when every requested mode was "
        "built (a bare --format all asks for every mode that builds), 1 when some were not, 2 when none was."
    )


QUANT_HELP = _quant_help()
REQUIRE_HELP = "--quant auto: " + "; ".join(f"{name} = consider {what}" for name, what in REQUIREMENTS.items()) + "."

Quant = Annotated[
    list[str] | None,
    typer.Option(
        "--quant",
        "-q",
        metavar="|".join((*MODES, *QUANT_WORDS)),
        help=QUANT_HELP,
        callback=each_of(tuple(dict.fromkeys((*named_modes(), *LM_MODES))), *QUANT_WORDS),
        rich_help_panel=panels.MODES,
    ),
]
Require = Annotated[Requirement | None, typer.Option("--require", help=REQUIRE_HELP, rich_help_panel=panels.AUTO)]
