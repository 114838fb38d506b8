"""Independent checks of what edgetool produced for one zoo model (one process per model; TensorFlow loaded once).

Nothing here calls edgetool's conversion or evaluation code: the reference is the SavedModel's serving signature
run by TensorFlow, .tflite files run with ai_edge_litert in a separate process (``litert_run``: batch 1, variables
reset per sample), TFJS models run in Node (``tfjs_check.js``), and int8/int16x8 are compared with the raw
``tf.lite.TFLiteConverter`` on the same settings (full-integer builtins, float I/O kept, the same calibration
samples fed by input name), which is the oracle for how good a quantized file can be.

Usage: python -m benchmarks.zoo.checks MODEL_DIR WORK_DIR CELL... (prints one JSON object: cell -> verdict)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TFJS_SAMPLES = 24
LITERT_TIMEOUT = 300
# Tolerances (outputs are probabilities or small regressions; "scale" = max |reference| of that output, at least 1).
FP32_ATOL = 1e-4
FP32_ATOL_RECURRENT = 1e-2  # fused LSTM/GRU kernels reorder float sums over 64 steps
FP16_MIN_AGREEMENT = 0.97
DYNAMIC_MIN_AGREEMENT = 0.90
TFJS_ATOL = 1e-3
QUANT_SLACK = 0.03  # edgetool's int8/int16x8 agreement may trail the raw converter's by this much (sample noise)
QAT_SLACK = 0.02  # QAT accuracy may trail int8 PTQ by this much before it counts as worse
NO_ORACLE_MIN_AGREEMENT = 0.5


class Context:
    """One model: its eval inputs (by signature name), labels, SavedModel outputs, calibration samples, spec."""

    def __init__(self, model_dir: Path, work: Path):
        import tensorflow as tf  # noqa: PLC0415

        from benchmarks.zoo.models import SPECS  # noqa: PLC0415

        self.tf = tf
        self.model_dir = Path(model_dir)
        self.work = Path(work)
        self.spec = SPECS[self.model_dir.name]
        self.loaded = tf.saved_model.load(str(model_dir))
        self.fn = self.loaded.signatures["serving_default"]
        self.in_specs = self.fn.structured_input_signature[1]
        self.inputs, self.y = self._load(self.model_dir / "eval.npz")
        self.calibration, _ = self._load(self.model_dir / "calibration.npz")
        self.reference = self.saved_model_outputs(self.inputs)
        self.n = len(self.y)

    def _load(self, path: Path) -> tuple[dict, np.ndarray]:
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        y = arrays.pop("y")
        if set(arrays) == {"x"} and len(self.in_specs) == 1:
            arrays = {next(iter(self.in_specs)): arrays["x"]}
        return {k: arrays[k].astype(s.dtype.as_numpy_dtype) for k, s in self.in_specs.items()}, y

    def saved_model_outputs(self, inputs: dict, batch: int = 64) -> dict[str, np.ndarray]:
        """The serving signature's outputs for every sample, in batches."""
        n = len(next(iter(inputs.values())))
        parts: dict[str, list] = {}
        for s in range(0, n, batch):
            out = self.fn(**{k: self.tf.constant(v[s:s + batch]) for k, v in inputs.items()})
            for k, v in out.items():
                parts.setdefault(k, []).append(np.asarray(v, dtype=np.float32))
        return {k: np.concatenate(v) for k, v in parts.items()}


# ---------- comparing outputs ----------

def primary(outputs: dict[str, np.ndarray]) -> str:
    """The class-score head: the first output (by name) with more than one value per sample."""
    for name in sorted(outputs):
        if outputs[name].ndim == 2 and outputs[name].shape[1] > 1:
            return name
    return sorted(outputs)[0]


def compare(ref: dict, got: dict, y: np.ndarray | None) -> dict:
    """Agreement and accuracy on the primary head, max abs error (absolute and relative to scale) over all heads."""
    missing = sorted(set(ref) - set(got))
    if missing:
        return {"error": f"outputs {missing} missing (got {sorted(got)})"}
    head = primary(ref)
    n = min(len(ref[head]), len(got[head]))
    metrics = {"samples": n, "head": head}
    worst = 0.0
    for name in ref:
        a, b = ref[name][:n].reshape(n, -1), got[name][:n].reshape(n, -1)
        if a.shape != b.shape:
            return {"error": f"output {name}: shape {b.shape[1:]} where the SavedModel gives {a.shape[1:]}"}
        worst = max(worst, float(np.abs(a - b).max() / max(1.0, float(np.abs(a).max()))))
    metrics["max_rel_error"] = worst
    metrics["agreement"] = float((ref[head][:n].argmax(-1) == got[head][:n].argmax(-1)).mean())
    if y is not None:
        metrics["accuracy"] = float((got[head][:n].argmax(-1) == y[:n]).mean())
        metrics["reference_accuracy"] = float((ref[head][:n].argmax(-1) == y[:n]).mean())
    return metrics


# ---------- running artefacts in other processes ----------

def run_tflite(ctx: Context, path: Path, inputs: dict | None = None) -> dict:
    """Outputs of ``path`` under ai_edge_litert (own process); {"error": ...} when it fails or aborts."""
    inputs = ctx.inputs if inputs is None else inputs
    with tempfile.TemporaryDirectory(dir=ctx.work) as tmp:
        np.savez(Path(tmp) / "in.npz", **inputs)
        proc = subprocess.run([sys.executable, "-m", "benchmarks.zoo.litert_run", str(path), f"{tmp}/in.npz",
                               f"{tmp}/out.npz"], capture_output=True, text=True, cwd=REPO, timeout=LITERT_TIMEOUT,
                              env=_env())
        if proc.returncode != 0:
            return {"error": f"does not run in LiteRT ({_exit(proc.returncode)}): {_last_line(proc.stderr)}"}
        with np.load(f"{tmp}/out.npz") as f:
            return {k: f[k] for k in f.files}


def run_tfjs(ctx: Context, model_dir: Path, n: int = TFJS_SAMPLES) -> dict:
    """Outputs of a TFJS graph model on the first ``n`` samples, in Node (cpu backend, executeAsync)."""
    bundle = REPO / "web_demo" / "vendor" / "tf.min.js"
    feed = {k: {"dtype": "int32" if v.dtype.kind in "iu" else "float32", "shape": list(v[:n].shape),
                "data": v[:n].ravel().tolist()} for k, v in ctx.inputs.items()}
    with tempfile.TemporaryDirectory(dir=ctx.work) as tmp:
        Path(tmp, "in.json").write_text(json.dumps(feed))
        proc = subprocess.run(["node", str(HERE / "tfjs_check.js"), str(bundle), str(model_dir), f"{tmp}/in.json",
                               f"{tmp}/out.json"], capture_output=True, text=True, timeout=LITERT_TIMEOUT)
        if proc.returncode != 0:
            return {"error": f"does not run in tfjs/Node (cpu backend): {_error_line(proc.stderr)}"}
        out = json.loads(Path(tmp, "out.json").read_text())
    return {k: np.asarray(v["data"], np.float32).reshape(v["shape"]) for k, v in out.items()}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _exit(rc: int) -> str:
    if rc < 0:
        import signal  # noqa: PLC0415

        return f"killed by {signal.Signals(-rc).name}"
    return f"exit {rc}"


def _error_line(text: str) -> str:
    """The first line of a JS error (not its stack frames)."""
    lines = [ln.strip() for ln in text.splitlines() if re.search(r"Error\b", ln) and not ln.strip().startswith("at ")]
    return lines[0][:300] if lines else _last_line(text)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no message)"


# ---------- the raw-converter oracle ----------

def oracle_tflite(ctx: Context, mode: str, batch: int | None) -> tuple[Path | None, str]:
    """The raw TFLiteConverter's int8/int16x8 file for this model (batch fixed when ``batch``), or (None, why not)."""
    tf = ctx.tf
    dest = ctx.work / f"oracle_{mode}.tflite"
    if dest.is_file():
        return dest, ""
    source = ctx.model_dir if batch is None else _fixed_batch_saved_model(ctx, batch)
    conv = tf.lite.TFLiteConverter.from_saved_model(str(source))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    ops = tf.lite.OpsSet
    conv.target_spec.supported_ops = [ops.TFLITE_BUILTINS_INT8 if mode == "int8"
                                      else ops.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    cal = ctx.calibration

    def representative():
        for i in range(len(next(iter(cal.values())))):
            yield {k: v[i:i + 1] for k, v in cal.items()}

    conv.representative_dataset = representative
    try:
        dest.write_bytes(conv.convert())
    except Exception as exc:  # noqa: BLE001 - the oracle's own failure is information, not a bug here
        return None, _last_line(str(exc).split("\n\n")[0])
    return dest, ""


def _fixed_batch_saved_model(ctx: Context, batch: int) -> Path:
    """The serving signature re-traced with the batch dimension fixed, saved beside the work files."""
    tf = ctx.tf
    dest = ctx.work / f"oracle_batch{batch}_savedmodel"
    if dest.is_dir():
        return dest
    names = sorted(ctx.in_specs)
    specs = [tf.TensorSpec([batch, *ctx.in_specs[k].shape[1:]], ctx.in_specs[k].dtype, name=k) for k in names]
    fn = ctx.fn

    class Fixed(tf.Module):
        @tf.function(input_signature=specs)
        def serve(self, *args):
            return fn(**dict(zip(names, args)))

    module = Fixed()
    module.source = ctx.loaded  # track the original variables
    tf.saved_model.save(module, str(dest), signatures={"serving_default": module.serve.get_concrete_function()})
    return dest


# ---------- verdicts, one per cell ----------

def ok(reason: str = "", **metrics) -> dict:
    """A passing verdict."""
    return {"status": "ok", "reason": reason, "metrics": metrics}


def wrong(reason: str, **metrics) -> dict:
    """A failing verdict: something was produced but it is not right."""
    return {"status": "wrong", "reason": reason, "metrics": metrics}


def _tflite_files(out: Path) -> list[Path]:
    return sorted(Path(out).glob("*.tflite"))


def _one_tflite(out: Path) -> Path | None:
    files = _tflite_files(out)
    return files[0] if len(files) == 1 else None


def check_float_mode(ctx: Context, cell: str, out: Path) -> dict:
    """fp32 / fp16 / dynamic: the file runs and matches the SavedModel within the mode's tolerance."""
    path = _one_tflite(out)
    if path is None:
        return wrong(f"expected one .tflite in the output, found {[p.name for p in _tflite_files(out)]}")
    got = run_tflite(ctx, path)
    if "error" in got:
        return wrong(got["error"])
    m = compare(ctx.reference, got, ctx.y)
    if "error" in m:
        return wrong(m["error"])
    if cell == "fp32":
        tol = FP32_ATOL_RECURRENT if ctx.spec.recurrent else FP32_ATOL
        if m["max_rel_error"] > tol:
            return wrong(f"fp32 differs from the SavedModel by {m['max_rel_error']:.2e} (> {tol:g})", **m)
    elif cell == "fp16" and m["agreement"] < FP16_MIN_AGREEMENT:
        return wrong(f"fp16 top-1 agreement {m['agreement']:.3f} < {FP16_MIN_AGREEMENT}", **m)
    elif cell == "dynamic" and m["agreement"] < DYNAMIC_MIN_AGREEMENT:
        return wrong(f"dynamic top-1 agreement {m['agreement']:.3f} < {DYNAMIC_MIN_AGREEMENT}", **m)
    return ok(**m)


def check_quant_mode(ctx: Context, cell: str, out: Path, batch: int | None) -> dict:
    """int8 / int16x8: runs, and agrees with the SavedModel at least as well as the raw converter's file (- slack)."""
    path = _one_tflite(out)
    if path is None:
        return wrong(f"expected one .tflite in the output, found {[p.name for p in _tflite_files(out)]}")
    got = run_tflite(ctx, path)
    oracle_path, why = oracle_tflite(ctx, cell, batch)
    oracle = run_tflite(ctx, oracle_path) if oracle_path else {"error": f"raw converter fails: {why}"}
    om = compare(ctx.reference, oracle, ctx.y) if "error" not in oracle else {}
    if "error" in got:
        note = "; the raw converter's file also fails" if "error" in oracle else ""
        return wrong(got["error"] + note, oracle_error=oracle.get("error"))
    m = compare(ctx.reference, got, ctx.y)
    if "error" in m:
        return wrong(m["error"])
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
    path = _one_tflite(out)
    if path is None:
        return wrong(f"expected one .tflite in the output, found {[p.name for p in _tflite_files(out)]}")
    got = run_tflite(ctx, path)
    if "error" in got:
        return wrong(got["error"])
    m = compare(ctx.reference, got, ctx.y)
    if "error" in m:
        return wrong(m["error"])
    ptq_path = _one_tflite(int8_out) if int8_out and Path(int8_out).is_dir() else None
    if ptq_path is None:
        ptq_path, _ = oracle_tflite(ctx, "int8", batch)
    ptq = run_tflite(ctx, ptq_path) if ptq_path else {"error": "no int8 PTQ file"}
    if "error" in ptq:
        return ok(f"no int8 PTQ to compare ({ptq['error'][:100]})", **m)
    pm = compare(ctx.reference, ptq, ctx.y)
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
    got = run_tfjs(ctx, model_dir)
    if "error" in got:
        return wrong(got["error"])
    ref = {k: v[:TFJS_SAMPLES] for k, v in ctx.reference.items()}
    m = compare(ref, got, ctx.y[:TFJS_SAMPLES])
    if "error" in m:
        return wrong(m["error"])
    if m["max_rel_error"] > TFJS_ATOL:
        return wrong(f"tfjs differs from the SavedModel by {m['max_rel_error']:.2e} (> {TFJS_ATOL:g})", **m)
    return ok(**m)


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
    m = compare(ctx.reference, got, ctx.y)
    drop = m["reference_accuracy"] - m["accuracy"]
    m.update(chosen=chosen["name"], drop=drop, reported_drop=chosen.get("accuracy_drop"))
    step = 1.0 / ctx.n
    if drop > decision["max_drop"] + step:
        return wrong(f"chosen {chosen['name']} drops {drop:.3f} > --max-drop {decision['max_drop']}", **m)
    if chosen.get("accuracy") is not None and abs(chosen["accuracy"] - m["accuracy"]) > step + 1e-9:
        return wrong(f"decision.json says accuracy {chosen['accuracy']:.4f}, independently {m['accuracy']:.4f}", **m)
    return ok(f"chose {chosen['name']}", **m)


def check_eval(ctx: Context, out: Path) -> dict:
    """eval: every .tflite row's accuracy and agreement, and the reference accuracy, match an independent run."""
    report_file = Path(out) / "eval.json"
    if not report_file.is_file():
        return wrong("no eval.json written")
    report = json.loads(report_file.read_text())
    step = 1.0 / ctx.n + 1e-9
    ref_acc = compare(ctx.reference, ctx.reference, ctx.y)["accuracy"]
    problems, checked = [], 0
    if report["reference"].get("accuracy") is not None and abs(report["reference"]["accuracy"] - ref_acc) > step:
        problems.append(f"reference accuracy {report['reference']['accuracy']:.4f} vs {ref_acc:.4f}")
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
        m = compare(ctx.reference, got, ctx.y)
        checked += 1
        for key, mine in (("accuracy", m["accuracy"]), ("top1_agreement", m["agreement"])):
            if row.get(key) is not None and abs(row[key] - mine) > step:
                problems.append(f"{path.name} {key} {row[key]:.4f}, independently {mine:.4f}")
    if problems:
        return wrong("; ".join(problems))
    return ok(f"{checked} .tflite rows agree", rows=len(report["results"]), checked=checked)


def check_demo(ctx: Context, out: Path, browser: bool) -> dict:
    """demo: a site with config, model and service worker; with ``browser``, predict() matches TF in Chromium."""
    site = Path(out) / "site"
    needed = ["index.html", "demo-config.json", "sw.js", "model/model.json"]
    missing = [n for n in needed if not (site / n).is_file()]
    if missing:
        return wrong(f"site lacks {missing}")
    if not browser:
        return ok("site written (browser check off)")
    from benchmarks.zoo.browser import predict_in_browser  # noqa: PLC0415

    n = 4
    got = predict_in_browser(site, {k: v[:n] for k, v in ctx.inputs.items()})
    if "error" in got:
        return wrong(got["error"])
    ref = {k: v[:n] for k, v in ctx.reference.items()}
    if "__probabilities__" in got:  # a page whose predict() returns only the ranked head's probabilities
        head = primary(ref)
        ref, got = {head: ref[head]}, {head: got["__probabilities__"]}
    m = compare(ref, got, ctx.y[:n])
    if "error" in m:
        return wrong(m["error"])
    if m["max_rel_error"] > TFJS_ATOL:
        return wrong(f"page's predict() differs from TF by {m['max_rel_error']:.2e}", **m)
    return ok("predict() in Chromium matches TF", **m)


def verdict(ctx: Context, cell: str, out: Path, args: dict) -> dict:
    """Dispatch to the cell's check; any exception in a check is reported as the check's own failure."""
    batch = args.get("batch")
    if cell in ("fp32", "fp16", "dynamic"):
        return check_float_mode(ctx, cell, out)
    if cell in ("int8", "int16x8"):
        return check_quant_mode(ctx, cell, out, batch)
    if cell == "qat":
        return check_qat(ctx, out, batch, args.get("int8_out"))
    return {"tfjs": lambda: check_tfjs(ctx, out), "auto": lambda: check_auto(ctx, out),
            "eval": lambda: check_eval(ctx, out), "demo": lambda: check_demo(ctx, out, args.get("browser", False))}[cell]()


def main(argv: list[str]) -> None:
    """python -m benchmarks.zoo.checks MODEL_DIR WORK_DIR REQUEST_JSON: {cell: {"out": dir, ...args}}."""
    model_dir, work, request = Path(argv[0]), Path(argv[1]), json.loads(Path(argv[2]).read_text())
    ctx = Context(model_dir, work)
    results = {}
    for cell, args in request.items():
        try:
            results[cell] = verdict(ctx, cell, Path(args["out"]), args)
        except Exception as exc:  # noqa: BLE001 - a check that cannot run must not hide the other cells
            results[cell] = {"status": "unchecked", "reason": f"check failed: {type(exc).__name__}: {exc}"[:300],
                             "metrics": {}}
        print(json.dumps({cell: results[cell]}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main(sys.argv[1:])
