"""The TensorFlow.js half of a demo site: the tfjs graph model placed in the site, or why there can be none.

A ``--litert`` site does not need it: when the model cannot become a TensorFlow.js graph model (an op TensorFlow.js
has no kernel for, such as the ``Erfc`` an exact GELU lowers to, or a file whose outputs in tfjs disagree with
TensorFlow's), the page runs the LiteRT.js engine alone. Without ``--litert`` that failure is a refusal naming the
cause and the way out.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from edge_tool.core.steps import console
from edge_tool.demo import model as model_mod
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.model import ModelKind
from edge_tool.demo.tflite_model import NO_TFJS
from edge_tool.errors import ConversionError
from edge_tool.models.precision import float32_saved_model
from edge_tool.tfjs_writer.export import export_tfjs, ops_from_refusal
from edge_tool.tfjs_writer.state import StatefulRefused

# an older converter's words, as check and older logs may carry them: "Unsupported Ops in the model …\nErfc"
_UNSUPPORTED = re.compile(r"Unsupported Ops in the model[^\n]*\n(?P<ops>[^\n]+)")
# ops an everyday layer lowers to, and that layer (so the user knows which part of the model it is)
_WHERE_FROM = {
    "Erfc": "the exact GELU, gelu(approximate=False) or Activation('gelu')",
    "Erf": "the exact GELU, gelu(approximate=False) or Activation('gelu')",
}


def unsupported_ops(message: str) -> list[str]:
    """The op names listed as unsupported in ``message`` (convert's refusal, ``export_tfjs`` raises it); empty when
    it names none."""
    found = _UNSUPPORTED.search(message)
    if not found:
        return sorted(set(ops_from_refusal(message)))
    return sorted({op.strip() for op in re.split(r"[,\s]+", found.group("ops")) if op.strip()})


def litert_blocker(input_specs: list[dict], outputs: int = 1) -> str | None:
    """Why ``--litert`` cannot run a model with these inputs and ``outputs`` outputs (LiteRT.js: inputs of fixed
    shape; the page's LiteRT.js engine reads one output), or None."""
    open_sides = [i["name"] for i in input_specs if i.get("resized")]
    if open_sides:
        return f"its input {', '.join(open_sides)} has an open height/width"
    if outputs != 1:
        return f"the page's LiteRT.js engine reads one output and the model has {outputs}"
    return None


def tfjs_failure(model: Path, message: str, litert: bool, blocker: str | None = None) -> str:
    """One paragraph: why ``model`` has no TensorFlow.js graph model and the way out (``--litert``, unless
    ``blocker`` says why LiteRT.js cannot run it either)."""
    ops = unsupported_ops(message) or ops_from_refusal(message)
    origins = sorted({_WHERE_FROM[op] for op in ops if op in _WHERE_FROM})
    if ops:
        why = f"TensorFlow.js has no kernel for the op{'s' if len(ops) > 1 else ''} {', '.join(ops)}" + (
            f" (what {' and '.join(origins)} lowers to)" if origins else ""
        )
    else:
        why = message.strip().splitlines()[0].rstrip(".") if message.strip() else "no reason was given"
    if litert:
        return (
            f"No TensorFlow.js model for {model}: {why}. The site runs the model with LiteRT.js alone "
            "(no TensorFlow.js engine)."
        )
    if blocker:
        return (
            f"No TensorFlow.js model for {model}: {why}, so there is no TensorFlow.js page to build; "
            f"nor does --litert help: LiteRT.js in the page runs inputs of fixed shape only and a single output, "
            f"and {blocker}. "
            f"Convert it for TFLite instead (`edgetool convert {model}`), or build the browser model without "
            "that op (for GELU: gelu(approximate=True), which TensorFlow.js runs)."
        )
    return (
        f"No TensorFlow.js model for {model}: {why}, so there is no TensorFlow.js page to build. "
        f"`edgetool demo {model} --litert` builds the page from a LiteRT.js .tflite alone (fp32; with "
        "--calibration DATA, or a calibration.npz beside the model, an int8 build too), which runs it."
    )


def place_tfjs(cfg: DemoConfig, kind: ModelKind, dest: Path, input_specs: list[dict], outputs: int = 1) -> str | None:
    """Put the tfjs graph model into ``dest``; None when it is there, else (``--litert`` only) why there can be
    none. Without ``--litert`` that failure raises ConversionError (exit 2) naming the op and ``--litert``
    (or, when LiteRT.js cannot run ``input_specs`` either, why not and what works)."""
    if kind is ModelKind.TFLITE:
        return NO_TFJS
    if kind is ModelKind.SAVED_MODEL:
        try:
            with float32_saved_model(Path(cfg.model), cfg.signature) as (model, key, _):  # mixed precision: recast
                written = export_tfjs(model, dest, signature=key)
        except StatefulRefused:
            raise  # its message is complete: no page, --litert included (docs/streaming.md)
        except ConversionError as exc:
            shutil.rmtree(dest, ignore_errors=True)
            if not cfg.litert:
                blocker = litert_blocker(input_specs, outputs)
                raise ConversionError(tfjs_failure(Path(cfg.model), str(exc), False, blocker)) from None
            return tfjs_failure(Path(cfg.model), str(exc), True)
        if not written.check.get("checked"):
            console.print(f"tfjs: self-check skipped ({written.check.get('reason', 'no reason given')})")
        return None
    meta, _, _ = model_mod.read_tfjs_model(Path(cfg.model))
    dest.mkdir(parents=True)
    for name in ["model.json", *model_mod.weight_files(Path(cfg.model), meta)]:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(cfg.model) / name, dest / name)
    return None
