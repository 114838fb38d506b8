"""MobileNetV2-224 through every TFLite mode: size, conversion time, drift and LiteRT p50 at 1 and 2 threads.

Builds tf_keras.applications.MobileNetV2(weights=None) (seeded random weights, no download), saves it as a
SavedModel, converts it to fp32 / fp16 / dynamic / int8 / int16x8 (with ``edge_tool.convert.api`` when it exists,
else the raw TFLiteConverter), evaluates each .tflite with ``edge_tool.evaluate`` on seeded random inputs
(agreement with the SavedModel; accuracy is meaningless on random data), times batch-1 inference at 1 and
2 threads, prints the table and writes the ``mobilenet`` section of benchmarks/RESULTS.md.

Usage: .venv/bin/python benchmarks/bench_mobilenet.py [--samples 16] [--runs 30] [--modes fp32,int8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_tool.evaluate import EvalConfig, run_eval
from edge_tool.evaluate.latency import measure_tflite_subprocess
from edge_tool.litert.tflite_runner import TfliteInterpreter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import machine, table, write_section

from edge_tool.core.env import import_tf
from edge_tool.errors import EdgeToolError
from tests.oracles.raw_converter import MODES, raw_converter


def build_model(out: Path) -> None:
    """MobileNetV2-224, random seeded weights, saved as a Keras-2 SavedModel with serving_default."""
    import_tf()  # sets TF_USE_LEGACY_KERAS before tf_keras loads
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
    model.save(str(out), save_format="tf", include_optimizer=False)


def convert_all(saved: Path, cal: Path, out_dir: Path, modes: tuple[str, ...]) -> dict[str, tuple[Path, float]]:
    """{mode: (.tflite path, conversion seconds)} via edgetool's convert API, else the raw converter."""
    try:
        from edge_tool.convert.api import convert  # noqa: PLC0415
        from edge_tool.convert.config import ConvertConfig  # noqa: PLC0415
    except ImportError:
        return {m: _raw(saved, cal, out_dir, m) for m in modes}
    result = convert(ConvertConfig(model=saved, output_dir=out_dir, modes=modes, calibration=cal, samples=16))
    return {a.quant: (result.path_of(a), a.seconds) for a in result.artifacts if a.format == "tflite"}


def _raw(saved: Path, cal: Path, out_dir: Path, mode: str) -> tuple[Path, float]:
    tf = import_tf()
    x = np.load(cal)["x"]
    t0 = time.perf_counter()
    conv = raw_converter(tf, saved, mode, lambda: ([x[i : i + 1]] for i in range(len(x))))
    data = conv.convert()
    path = out_dir / f"mobilenetv2_{mode}.tflite"
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path, time.perf_counter() - t0


def main() -> None:
    """Build, convert, evaluate, print and record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=16, help="random eval/calibration images")
    ap.add_argument("--runs", type=int, default=30, help="timed calls per model and thread count")
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    modes = tuple(m for m in args.modes.split(",") if m)

    with tempfile.TemporaryDirectory(prefix="bench-mobilenet-") as tmp:
        tmp = Path(tmp)
        saved, data = tmp / "mobilenetv2", tmp / "data.npz"
        build_model(saved)
        x = np.random.default_rng(0).uniform(-1, 1, (args.samples, 224, 224, 3)).astype(np.float32)
        np.savez(data, x=x)
        made = convert_all(saved, data, tmp / "tflite", modes)
        rows, fp32_p50, report = [], {}, None
        for mode, (path, secs) in made.items():
            try:
                one = run_eval(
                    EvalConfig(artifacts=(path,), reference=saved, data=data, threads=1, warmup=5, runs=args.runs)
                )
            except EdgeToolError as exc:  # e.g. LiteRT refusing int16x8 depthwise convs: record, don't abort
                rows.append(
                    [
                        mode,
                        f"{path.stat().st_size / 1e6:.2f} MB",
                        f"{secs:.1f} s",
                        "does not load in LiteRT: " + str(exc).split(":")[-1].strip()[:80],
                        "",
                        "",
                        "",
                        None,
                    ]
                )
                continue
            report, res = one, one.results[0]
            model = TfliteInterpreter(path)
            feeds = {k: v[:1] for k, v in model.prepare({model.inputs[0].name: x[:1]}).items()}
            p2, _ = measure_tflite_subprocess(path, feeds, [b.index for b in model.outputs], 2, 5, args.runs, None)
            p50 = {1: res.latency.p50, 2: p2.p50}
            if mode == "fp32":
                fp32_p50 = p50
            rows.append(
                [
                    mode,
                    f"{res.size_bytes / 1e6:.2f} MB",
                    f"{secs:.1f} s",
                    f"{100 * res.top1_agreement:.1f}%",
                    f"{res.max_abs_error:.2e}",
                    f"{p50[1]:.2f} ms",
                    f"{p50[2]:.2f} ms",
                    p50,
                ]
            )
    headers = [
        "mode",
        "size",
        "convert",
        "top-1 agreement",
        "max abs err",
        "p50 1 thread",
        "p50 2 threads",
        "p50 vs fp32 (1 / 2 thr)",
    ]
    for row in rows:
        p50 = row.pop()
        row.append(f"{p50[1] / fp32_p50[1]:.2f}× / {p50[2] / fp32_p50[2]:.2f}×" if fp32_p50 and p50 else "—")
    ref = report.reference
    body = "\n".join(
        [
            f"## MobileNetV2-224 through every mode (`benchmarks/bench_mobilenet.py`, {args.runs} timed runs)",
            "",
            f"Machine: {machine()}; LiteRT {report.machine.get('litert')}, TensorFlow {report.machine.get('tensorflow')}.",
            f"Random weights (weights=None, seed 0), {args.samples} seeded random inputs in [-1, 1]; agreement and error "
            f"are against the SavedModel ({ref.size_bytes / 1e6:.1f} MB, TF p50 {ref.latency.p50:.1f} ms); untrained "
            "weights give near-uniform outputs, so those two columns say little here: size and latency are the point. "
            "Latency: "
            "batch 1, set_tensor+invoke+get_tensor, fresh process per model. The machine is shared, so treat "
            "differences under ~20 % as noise.",
            "",
            table(headers, rows),
        ]
    )
    print(body)
    write_section("mobilenet", body)


if __name__ == "__main__":
    main()
