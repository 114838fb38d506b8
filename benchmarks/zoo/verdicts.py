"""The verdict on one cell: what edgetool produced, run independently (``oracles``) and compared with the SavedModel
(``context``), against each cell's tolerance. A verdict is ``ok``, or ``wrong`` with the reason and the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks.zoo.context import Context, compare
from benchmarks.zoo.oracles import TFJS_SAMPLES, oracle_tflite, run_tfjs, run_tflite

# Tolerances (outputs are probabilities or small regressions; "scale" = max |reference| of that output, at least 1).
FP32_ATOL = 1e-4
FP32_ATOL_RECURRENT = 1e-2  # fused LSTM/GRU kernels reorder float sums over 64 steps
FP16_MIN_AGREEMENT = 0.97
DYNAMIC_MIN_AGREEMENT = 0.90
TFJS_ATOL = 1e-3
MIXED_ATOL = 2e-2  # a mixed-precision SavedModel computes in float16 (bfloat16: 8 mantissa bits) — its rounding
QUANT_SLACK = 0.03  # edgetool's int8/int16x8 agreement may trail the raw converter's by this much (sample noise)
QAT_SLACK = 0.02  # QAT accuracy may trail int8 PTQ by this much before it counts as worse
NO_ORACLE_MIN_AGREEMENT = 0.5


def ok(reason: str = "", **metrics) -> dict:
    """A passing verdict."""
    return {"status": "ok", "reason": reason, "metrics": metrics}


def wrong(reason: str, **metrics) -> dict:
    """A failing verdict: something was produced but it is not right."""
    return {"status": "wrong", "reason": reason, "metrics": metrics}


def _one_tflite(out: Path) -> tuple[Path | None, dict | None]:
    """(the output's single .tflite, None), or (None, a failing verdict naming what is there instead)."""
    files = sorted(Path(out).glob("*.tflite"))
    if len(files) == 1:
        return files[0], None
    return None, wrong(f"expected one .tflite in the output, found {[p.name for p in files]}")


def _measured(ref: dict, got: dict, y, task: str) -> tuple[dict | None, dict | None]:
    """(metrics of ``got`` against ``ref``, None), or (None, a failing verdict) when it did not run or does not fit."""
    if "error" in got:
        return None, wrong(got["error"])
    m = compare(ref, got, y, task)
    return (None, wrong(m["error"])) if "error" in m else (m, None)


def _measured_tflite(ctx: Context, out: Path) -> tuple[dict | None, dict | None]:
    """:func:`_measured` for the output's single .tflite run in LiteRT."""
    path, failed = _one_tflite(out)
    return (None, failed) if failed else _measured(ctx.reference, run_tflite(ctx, path), ctx.y, ctx.spec.task)


def close_to_reference(
    ref: dict, got: dict, y, task: str, differs: str, passed: str = "", atol: float = TFJS_ATOL
) -> dict:
    """ok (``passed``) when every head of ``got`` is within ``atol`` of ``ref`` (relative to its scale), else wrong."""
    m, failed = _measured(ref, got, y, task)
    if failed:
        return failed
    if m["max_rel_error"] > atol:
        return wrong(f"{differs} by {m['max_rel_error']:.2e} (> {atol:g})", **m)
    return ok(passed, **m)


def check_float_mode(ctx: Context, cell: str, out: Path) -> dict:
    """fp32 / fp16 / dynamic: the file runs and matches the SavedModel within the mode's tolerance."""
    m, failed = _measured_tflite(ctx, out)
    if failed:
        return failed
    if cell == "fp32" and ctx.spec.mixed:
        return _float32_twin(ctx, out, m, "fp32")
    if cell == "fp32":
        tol = FP32_ATOL_RECURRENT if ctx.spec.recurrent else FP32_ATOL
        if m["max_rel_error"] > tol:
            return wrong(f"fp32 differs from the SavedModel by {m['max_rel_error']:.2e} (> {tol:g})", **m)
    elif cell == "fp16" and m["agreement"] < FP16_MIN_AGREEMENT:
        return wrong(f"fp16 top-1 agreement {m['agreement']:.3f} < {FP16_MIN_AGREEMENT}", **m)
    elif cell == "dynamic" and m["agreement"] < DYNAMIC_MIN_AGREEMENT:
        return wrong(f"dynamic top-1 agreement {m['agreement']:.3f} < {DYNAMIC_MIN_AGREEMENT}", **m)
    return ok(**m)


def _float32_twin(ctx: Context, out: Path, m: dict, what: str, atol: float = FP32_ATOL) -> dict:
    """A mixed-precision model's float32 file: within ``atol`` of the model's float32 twin (``twin.npz``: the same
    layers built under the float32 policy with the trained weights), and within float16 rounding of the SavedModel
    as trained (``m``: already measured against it)."""
    if m["max_rel_error"] > MIXED_ATOL:
        return wrong(f"{what} differs from the SavedModel (float16 compute) by {m['max_rel_error']:.2e}", **m)
    got = _outputs(ctx, out)
    if not got or "error" in got:
        return wrong(f"{what}: no output to compare with the float32 twin ({got.get('error', '')})"[:300], **m)
    n = len(next(iter(got.values())))
    with np.load(ctx.model_dir / "twin.npz") as f:
        twin = {k: f[k][:n] for k in f.files}
    tm = compare(twin, got, ctx.y[:n], ctx.spec.task)
    m["twin_max_rel_error"] = tm.get("max_rel_error")
    if "error" in tm or tm["max_rel_error"] > atol:
        return wrong(f"{what} differs from the float32 twin by {tm.get('max_rel_error', tm.get('error'))}", **m)
    return ok("float32 recast: matches the float32 twin", **m)


def _outputs(ctx: Context, out: Path) -> dict:
    """The outputs of what ``out`` holds: its .tflite in LiteRT, else its tfjs model in Node (first samples)."""
    path = next(iter(sorted(Path(out).glob("*.tflite"))), None)
    if path is not None:
        return run_tflite(ctx, path)
    model_dir = next((p.parent for p in sorted(Path(out).rglob("model.json"))), None)
    return run_tfjs(ctx, model_dir) if model_dir else {}


def check_quant_mode(ctx: Context, cell: str, out: Path, batch: int | None) -> dict:
    """int8 / int16x8: runs, and agrees with the SavedModel at least as well as the raw converter's file (- slack)."""
    path, failed = _one_tflite(out)
    if failed:
        return failed
    got = run_tflite(ctx, path)
    oracle_path, why = oracle_tflite(ctx, cell, batch)
    oracle = run_tflite(ctx, oracle_path) if oracle_path else {"error": f"raw converter fails: {why}"}
    om = compare(ctx.reference, oracle, ctx.y, ctx.spec.task) if "error" not in oracle else {}
    if "error" in got:
        note = "; the raw converter's file also fails" if "error" in oracle else ""
        return wrong(got["error"] + note, oracle_error=oracle.get("error"))
    m, failed = _measured(ctx.reference, got, ctx.y, ctx.spec.task)
    if failed:
        return failed
    if "error" in oracle or "error" in om:
        m["oracle"] = oracle.get("error") or om.get("error")
        if m["agreement"] < NO_ORACLE_MIN_AGREEMENT:
            return wrong(f"top-1 agreement {m['agreement']:.3f} and no raw-converter file to compare", **m)
        return ok(f"no oracle ({m['oracle'][:120]})", **m)
    m["oracle_agreement"] = om["agreement"]
    if m["agreement"] < om["agreement"] - QUANT_SLACK:
        return wrong(f"agreement {m['agreement']:.3f} vs the raw converter's {om['agreement']:.3f}", **m)
    return ok(**m)


def _manifest_text(out: Path) -> str:
    f = Path(out) / "manifest.json"
    return f.read_text() if f.is_file() else ""


def check_qat(ctx: Context, out: Path, batch: int | None, int8_out: Path | None) -> dict:
    """qat: runs, and is at least as accurate as int8 PTQ (edgetool's int8 cell, else the raw converter's)."""
    m, failed = _measured_tflite(ctx, out)
    if failed:
        return failed
    ptq_path = _one_tflite(int8_out)[0] if int8_out and Path(int8_out).is_dir() else None
    if ptq_path is None:
        ptq_path, _ = oracle_tflite(ctx, "int8", batch)
    ptq = run_tflite(ctx, ptq_path) if ptq_path else {"error": "no int8 PTQ file"}
    if "error" in ptq:
        return ok(f"no int8 PTQ to compare ({ptq['error'][:100]})", **m)
    pm = compare(ctx.reference, ptq, ctx.y, ctx.spec.task)
    m["ptq_accuracy"] = pm["accuracy"]
    fell_back = "ptq" in _manifest_text(out).lower()
    if m["accuracy"] < pm["accuracy"] - QAT_SLACK and not fell_back:
        return wrong(f"QAT accuracy {m['accuracy']:.3f} < int8 PTQ {pm['accuracy']:.3f}", **m)
    return ok("fell back to PTQ" if fell_back and m["accuracy"] < pm["accuracy"] - QAT_SLACK else "", **m)


def check_tfjs(ctx: Context, out: Path) -> dict:
    """tfjs: the graph model runs in Node and matches the SavedModel on the first samples."""
    model_dir = next((p.parent for p in sorted(Path(out).rglob("model.json"))), None)
    if model_dir is None:
        return wrong("no model.json in the output")
    ref = {k: v[:TFJS_SAMPLES] for k, v in ctx.reference.items()}
    if ctx.spec.mixed:
        m, failed = _measured(ref, run_tfjs(ctx, model_dir), ctx.y[:TFJS_SAMPLES], ctx.spec.task)
        return failed or _float32_twin(ctx, out, m, "tfjs", TFJS_ATOL)
    return close_to_reference(
        ref, run_tfjs(ctx, model_dir), ctx.y[:TFJS_SAMPLES], ctx.spec.task, "tfjs differs from the SavedModel"
    )


def check_auto(ctx: Context, out: Path) -> dict:
    """auto: the chosen file's accuracy drop, measured independently, is within the budget and as reported."""
    decision_file = Path(out) / "decision.json"
    if not decision_file.is_file():
        return wrong("no decision.json")
    decision = json.loads(decision_file.read_text())
    chosen = next((c for c in decision.get("candidates", []) if c.get("chosen")), None)
    if chosen is None:
        return wrong("exit 0 but no candidate is marked chosen")
    path = Path(out) / chosen["file"]
    got = run_tflite(ctx, path)
    if "error" in got:
        return wrong(f"chosen {chosen['name']}: {got['error']}")
    m = compare(ctx.reference, got, ctx.y, ctx.spec.task)
    drop = m["reference_accuracy"] - m["accuracy"]
    m.update(chosen=chosen["name"], drop=drop, reported_drop=chosen.get("accuracy_drop"))
    step = 1.0 / ctx.n if ctx.spec.task == "classification" else max(1.0 / ctx.n, EVAL_METRIC_TOL)
    if drop > decision["max_drop"] + step:
        return wrong(f"chosen {chosen['name']} drops {drop:.3f} > --max-drop {decision['max_drop']}", **m)
    if chosen.get("accuracy") is not None and abs(chosen["accuracy"] - m["accuracy"]) > step + 1e-9:
        return wrong(f"decision.json says accuracy {chosen['accuracy']:.4f}, independently {m['accuracy']:.4f}", **m)
    return ok(f"chose {chosen['name']}", **m)


MAIN_METRIC = {
    "classification": "accuracy",
    "multilabel": "f1_macro",
    "regression": "r2",
    "segmentation": "miou",
    "detection": "box_iou",
    "embedding": "recall_at_1",
    "image": "psnr",
    "heatmap": "pck",
    "keypoints": "pck@0.1",
}
EVAL_METRIC_TOL = 0.02  # eval's task metric vs the independent one (streamed batches, float rounding)


def _row_main(row: dict, task: str):
    """The task's main metric of one eval row (classification: the legacy 'accuracy' field)."""
    if task == "classification" and row.get("accuracy") is not None:
        return row["accuracy"]
    return (row.get("metrics") or {}).get(MAIN_METRIC[task])


def check_eval(ctx: Context, out: Path) -> dict:
    """eval: the task eval chose is the model's, and the reference's and every .tflite row's main task metric
    (accuracy, macro F1, R², mIoU, box IoU) and agreement match an independent run."""
    report_file = Path(out) / "eval.json"
    if not report_file.is_file():
        return wrong("no eval.json written")
    report = json.loads(report_file.read_text())
    task = ctx.spec.task
    tol = max(1.0 / ctx.n, EVAL_METRIC_TOL) + 1e-9
    chosen = (report.get("task") or {}).get("name", "classification")
    if chosen != task:
        return wrong(
            f"eval measured the model as {chosen!r}; it is a {task} model "
            f"({(report.get('task') or {}).get('reason', '')})"[:300]
        )
    ref_main = compare(ctx.reference, ctx.reference, ctx.y, task).get("accuracy")
    problems, checked = [], 0
    said = _row_main(report["reference"], task)
    if said is not None and ref_main is not None and abs(said - ref_main) > tol:
        problems.append(f"reference {MAIN_METRIC[task]} {said:.4f} vs {ref_main:.4f}")
    for row in report["results"]:
        if row["format"] != "tflite":
            continue
        found = sorted(ctx.work.glob(f"*/{Path(row['artifact']).name}"))
        if not found:
            problems.append(f"row {row['artifact']!r} names no file that was evaluated")
            continue
        path = found[0]
        got = run_tflite(ctx, path)
        if "error" in got:
            continue  # eval reported a file that does not run: the row's own text says so
        m = compare(ctx.reference, got, ctx.y, task)
        checked += 1
        for key, theirs, mine in (
            (MAIN_METRIC[task], _row_main(row, task), m.get("accuracy")),
            ("agreement", row.get("top1_agreement") if task == "classification" else None, m["agreement"]),
        ):
            if theirs is not None and mine is not None and abs(theirs - mine) > tol:
                problems.append(f"{path.name} {key} {theirs:.4f}, independently {mine:.4f}")
    if problems:
        return wrong("; ".join(problems))
    return ok(f"task {task}: {checked} .tflite rows agree", rows=len(report["results"]), checked=checked)
