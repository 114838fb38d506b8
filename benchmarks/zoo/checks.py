"""Independent checks of what edgetool produced for one zoo model (one process per model; TensorFlow loaded once).

Nothing here calls edgetool's conversion or evaluation code: the reference is the SavedModel's serving signature
run by TensorFlow (``context``), the runs compared with it are LiteRT, Node and the raw converter (``oracles``),
and each cell's tolerance is in ``verdicts`` (the demo's: ``page_check``).

Usage: python -m benchmarks.zoo.checks MODEL_DIR WORK_DIR REQUEST_JSON (prints one JSON line per cell: cell -> verdict)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchmarks.zoo.context import Context
from benchmarks.zoo.page_check import check_demo
from benchmarks.zoo.refusals import justify, without_reference
from benchmarks.zoo.specs import SPECS
from benchmarks.zoo.verdicts import check_auto, check_eval, check_float_mode, check_qat, check_quant_mode, check_tfjs


def verdict(ctx: Context, cell: str, out: Path, args: dict) -> dict:
    """Dispatch to the cell's check; any exception in a check is reported as the check's own failure."""
    batch = args.get("batch")
    if cell in ("fp32", "fp16", "dynamic"):
        return check_float_mode(ctx, cell, out)
    if cell in ("int8", "int16x8"):
        return check_quant_mode(ctx, cell, out, batch)
    if cell == "qat":
        return check_qat(ctx, out, batch, args.get("int8_out"))
    return {
        "tfjs": lambda: check_tfjs(ctx, out),
        "auto": lambda: check_auto(ctx, out),
        "eval": lambda: check_eval(ctx, out),
        "demo": lambda: check_demo(ctx, out, args.get("browser", False)),
    }[cell]()


def main(argv: list[str]) -> None:
    """python -m benchmarks.zoo.checks MODEL_DIR WORK_DIR REQUEST_JSON: {cell: {"out": dir, ...args}} for what was
    produced, {cell: {"refused": reason}} for a refusal to judge (``refusals.justify``)."""
    model_dir, work, request = Path(argv[0]), Path(argv[1]), json.loads(Path(argv[2]).read_text())
    try:
        ctx = Context(model_dir, work)
    except Exception as exc:
        ctx, no_reference = (
            None,
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
        )
    results = {}
    for cell, args in request.items():
        try:
            # CELL@wayout: the cell run again with the option its refusal named (or the mode it named: check_as)
            base = args.get("check_as") or cell.split("@")[0]
            if ctx is None:
                results[cell] = without_reference(SPECS[model_dir.name], base, args, no_reference)
            elif "refused" in args:
                results[cell] = justify(ctx, base, args["refused"], args.get("batch"))
            else:
                results[cell] = verdict(ctx, base, Path(args["out"]), args)
        except Exception as exc:
            results[cell] = {
                "status": "unchecked",
                "reason": f"check failed: {type(exc).__name__}: {exc}"[:300],
                "metrics": {},
            }
        print(json.dumps({cell: results[cell]}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main(sys.argv[1:])
