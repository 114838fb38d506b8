"""The independent runs a verdict compares with: .tflite files under ai_edge_litert (``litert_run``, its own process:
batch 1, variables reset per sample), TFJS graph models in Node (``tfjs_check.js``), and the raw
``tf.lite.TFLiteConverter``'s int8/int16x8 file on the same settings (full-integer builtins, float I/O kept, the same
calibration samples fed by input name), the oracle for how good a quantized file can be."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.zoo.context import Context
from tests.oracles.raw_converter import raw_converter

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TFJS_SAMPLES = 24
LITERT_TIMEOUT = 300


def run_tflite(ctx: Context, path: Path, inputs: dict | None = None) -> dict:
    """Outputs of ``path`` under ai_edge_litert (own process); a file with TF Select (Flex) ops, which LiteRT lacks,
    under TensorFlow's interpreter with the Flex delegate; {"error": ...} when it fails or aborts."""
    inputs = ctx.inputs if inputs is None else inputs
    with tempfile.TemporaryDirectory(dir=ctx.work) as tmp:
        np.savez(Path(tmp) / "in.npz", **inputs)
        command = [sys.executable, "-m", "tests.oracles.litert_run", str(path), f"{tmp}/in.npz", f"{tmp}/out.npz"]
        proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=LITERT_TIMEOUT, env=_env())
        if proc.returncode != 0 and "Select TensorFlow op" in proc.stderr:
            proc = subprocess.run(
                [*command, "--flex"], capture_output=True, text=True, cwd=REPO, timeout=LITERT_TIMEOUT, env=_env()
            )
        if proc.returncode != 0:
            return {"error": f"does not run in LiteRT ({_exit(proc.returncode)}): {_last_line(proc.stderr)}"}
        with np.load(f"{tmp}/out.npz") as f:
            return {k: f[k] for k in f.files}


def run_tfjs(ctx: Context, model_dir: Path, n: int = TFJS_SAMPLES) -> dict:
    """Outputs of a TFJS graph model on the first ``n`` samples, in Node (cpu backend, executeAsync); a graph whose
    signature fixes the batch to 1 gets one sample per run."""
    if ctx.fixed_batch() == 1 and n > 1:
        runs = [_run_tfjs(ctx, model_dir, slice(i, i + 1)) for i in range(n)]
        if bad := next((r for r in runs if "error" in r), None):
            return bad
        return {k: np.concatenate([r[k] for r in runs]) for k in runs[0]}
    return _run_tfjs(ctx, model_dir, slice(0, n))


def _run_tfjs(ctx: Context, model_dir: Path, rows: slice) -> dict:
    bundle = REPO / "web_demo" / "vendor" / "tf.min.js"
    kinds = {"i": "int32", "u": "int32", "U": "string", "S": "string", "O": "string"}
    feed = {
        k: {"dtype": kinds.get(v.dtype.kind, "float32"), "shape": list(v[rows].shape), "data": v[rows].ravel().tolist()}
        for k, v in ctx.inputs.items()
    }
    with tempfile.TemporaryDirectory(dir=ctx.work) as tmp:
        Path(tmp, "in.json").write_text(json.dumps(feed))
        proc = subprocess.run(
            [
                "node",
                str(REPO / "tests" / "oracles" / "tfjs_check.js"),
                str(bundle),
                str(model_dir),
                f"{tmp}/in.json",
                f"{tmp}/out.json",
            ],
            capture_output=True,
            text=True,
            timeout=LITERT_TIMEOUT,
        )
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
    """The raw TFLiteConverter's file for ``mode`` on the documented settings (``tests/oracles/raw_converter``; int8
    and int16x8 calibrated on the same samples, fed by input name; batch fixed when ``batch``), or (None, why not)."""
    dest = ctx.work / f"oracle_{mode}.tflite"
    if dest.is_file():
        return dest, ""
    cal = ctx.calibration

    def representative():
        for i in range(len(next(iter(cal.values())))):
            yield {k: v[i : i + 1] for k, v in cal.items()}

    try:
        source = saved_model_of(ctx) if batch is None else _fixed_batch_saved_model(ctx, batch)
        if mode in ("int8", "int16x8"):  # TensorFlow's calibrator can die (a WHILE loop: SIGSEGV): in a child
            return _calibrated_in_child(ctx, source, mode, dest)
        conv = raw_converter(ctx.tf, source, mode, representative, signature="serving_default")
        dest.write_bytes(conv.convert())
    except Exception as exc:
        return None, _last_line(str(exc).split("\n\n")[0])
    return dest, ""


_RAW_CHILD = """
import sys, numpy as np, tensorflow as tf
from tests.oracles.raw_converter import raw_converter
source, mode, cal, dest = sys.argv[1:5]
with np.load(cal) as z:
    data = {k: z[k] for k in z.files}
def representative():
    for i in range(len(next(iter(data.values())))):
        yield {k: v[i : i + 1] for k, v in data.items()}
conv = raw_converter(tf, source, mode, representative, signature="serving_default")
open(dest, "wb").write(conv.convert())
"""


def _calibrated_in_child(ctx: Context, source: Path, mode: str, dest: Path) -> tuple[Path | None, str]:
    """The raw converter's calibrated ``mode`` file, made in a child process (same calibration samples by name)."""
    cal = ctx.work / f"oracle_{mode}_calibration.npz"
    np.savez(cal, **ctx.calibration)
    command = [sys.executable, "-c", _RAW_CHILD, str(source), mode, str(cal), str(dest)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=LITERT_TIMEOUT, env=_env())
    if proc.returncode != 0 or not dest.is_file():
        dest.unlink(missing_ok=True)
        return None, f"{_exit(proc.returncode)}: {_last_line(proc.stderr)}"
    return dest, ""


def saved_model_of(ctx: Context) -> Path:
    """The model as a SavedModel: its directory, or a ``.keras`` file's Keras 3 ``model.export()`` (made once); for a
    mixed-precision model, its float32 twin (``builders/gpu.py``), which the raw converter can convert."""
    if ctx.spec.mixed:
        return ctx.model_dir / "twin_savedmodel"
    if ctx.keras_model is None:
        return ctx.source
    dest = ctx.work / "oracle_export"
    if not dest.is_dir():
        ctx.keras_model.export(str(dest))
    return dest


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
