"""Is a refusal's reason the real one? (issue 22: every cell where the raw converter or tensorflowjs succeeds with the
same settings must be ok in edgetool; every other cell a refusal naming the real cause.)

A refusal is judged ``ok`` (justified) when it matches what the model's spec says the cause is (``expected_refusal``)
and the raw tool on the same settings fails too: the raw ``TFLiteConverter`` for the TFLite modes (its file must also
run in LiteRT to count as a success), ``tensorflowjs``'s own SavedModel conversion for tfjs and the demo (its model
must run in Node). Otherwise it is ``wrong`` with what the raw tool managed, and the runner marks the cell unclear."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.zoo.cells import TFLITE_MODES
from benchmarks.zoo.context import Context, compare
from benchmarks.zoo.oracles import TFJS_SAMPLES, oracle_tflite, run_tfjs, run_tflite, saved_model_of


def justify(ctx: Context, cell: str, reason: str, batch: int | None) -> dict:
    """ok (with what the raw tool said) when the refusal is the real one, else wrong naming why not."""
    problems = [
        f"the reason does not name {pattern!r}"
        for pattern in ctx.spec.expected_refusal(cell)
        if not re.search(pattern, reason, re.IGNORECASE)
    ]
    raw = _raw_tool(ctx, cell, batch)
    if raw.get("works"):
        problems.append(raw["works"])
    verdict = {"status": "wrong" if problems else "ok", "metrics": {}}
    verdict["reason"] = "; ".join(problems) if problems else raw.get("fails", "")
    return verdict


def without_reference(spec, cell: str, args: dict, why: str) -> dict:
    """The verdict when TensorFlow itself cannot run the model in the check process (``why``; a ``tf.numpy_function``
    model's callback exists only where it was traced): a refusal is justified when it names the cause the spec
    expects; anything produced, or a refusal of a model whose spec expects none, cannot be checked."""
    patterns = spec.expected_refusal(cell)
    if "refused" not in args or not patterns:
        return {
            "status": "unchecked",
            "reason": f"no reference: TensorFlow cannot run the model ({why[:200]})",
            "metrics": {},
        }
    missing = [p for p in patterns if not re.search(p, args["refused"], re.IGNORECASE)]
    if missing:
        return {"status": "wrong", "reason": f"the reason does not name {missing}", "metrics": {}}
    return {
        "status": "ok",
        "metrics": {},
        "reason": f"TensorFlow cannot run the model outside the process that traced it either ({why[:120]})",
    }


def _raw_tool(ctx: Context, cell: str, batch: int | None) -> dict:
    """{'works': what the raw tool managed} or {'fails': why it fails too} ({} when there is no raw tool)."""
    if cell in TFLITE_MODES:
        path, why = oracle_tflite(ctx, cell, batch)
        if path is None:
            return {"fails": f"raw TFLiteConverter fails too: {why[:150]}"}
        got = run_tflite(ctx, path)
        if "error" in got:
            return {"fails": f"raw TFLiteConverter's file fails too: {got['error'][:150]}"}
        m = compare(ctx.reference, got, ctx.y, ctx.spec.task)
        if "error" in m:
            return {"fails": f"raw TFLiteConverter's file does not fit: {m['error'][:150]}"}
        return {
            "works": f"the raw TFLiteConverter converts it with the same settings and LiteRT runs it "
            f"(agreement {m['agreement']:.3f})"
        }
    if cell in ("tfjs", "demo") and ctx.keras_model is None:  # the demo page runs the tfjs model
        return _raw_tfjs(ctx)
    return {}


def _raw_tfjs(ctx: Context) -> dict:
    """tensorflowjs' own SavedModel conversion (serving_default, no options), run in Node."""
    dest = ctx.work / "oracle_tfjs"
    try:
        from tensorflowjs.converters import tf_saved_model_conversion_v2 as conv

        if not (dest / "model.json").is_file():
            conv.convert_tf_saved_model(str(saved_model_of(ctx)), str(dest))
    except Exception as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        return {"fails": f"tensorflowjs fails too: {type(exc).__name__}: {(lines[0] if lines else '')[:150]}"}
    got = run_tfjs(ctx, Path(dest))
    if "error" in got:
        return {"fails": f"tensorflowjs converts it but the model fails in Node: {got['error'][:150]}"}
    ref = {k: v[:TFJS_SAMPLES] for k, v in ctx.reference.items()}
    m = compare(ref, got, ctx.y[:TFJS_SAMPLES], ctx.spec.task)
    if "error" in m:
        return {"fails": f"tensorflowjs' model does not fit: {m['error'][:150]}"}
    return {"works": f"tensorflowjs converts it and the model runs in Node (max rel error {m['max_rel_error']:.1e})"}
