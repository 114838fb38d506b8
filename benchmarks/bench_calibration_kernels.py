"""Why TensorFlow's int8 calibration costs 41 ms per MobileNetV2 sample: the same float .tflite under LiteRT with
XNNPACK, on TFLite's builtin kernels (what the calibrator's logging interpreter runs: XNNPACK would hide the
intermediate tensors it logs), and on the builtin kernels with every intermediate tensor kept.

The calibrator's own per-sample time comes from bench_peer.py's cProfile of ``FeedTensor``; the gap between it and
the "builtin kernels, all tensors kept" row is its min/max logging.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_calibration_kernels.py [--runs 20] [--no-record]
Writes the 'calibration-kernels' section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import machine, table, write_section
from bench_eval_scale import prepare_models


def p50_ms(path: Path, runs: int, **options) -> float:
    """Median set_tensor + invoke of one seeded input at 1 thread (after one untimed call)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path), num_threads=1, **options)
    interp.allocate_tensors()
    index = interp.get_input_details()[0]["index"]
    x = np.random.default_rng(0).uniform(-1, 1, interp.get_input_details()[0]["shape"]).astype(np.float32)
    interp.set_tensor(index, x)
    interp.invoke()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        interp.set_tensor(index, x)
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    """Measure the three rows, print and record them."""
    from ai_edge_litert.interpreter import OpResolverType

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    _, tflites = prepare_models()
    builtin = {"experimental_op_resolver_type": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
    rows = [
        ["XNNPACK (LiteRT's default)", p50_ms(tflites["fp32"], args.runs)],
        ["TFLite builtin kernels (no XNNPACK)", p50_ms(tflites["fp32"], args.runs, **builtin)],
        [
            "builtin kernels, every tensor kept",
            p50_ms(tflites["fp32"], args.runs, **builtin, experimental_preserve_all_tensors=True),
        ],
    ]
    body = "\n".join(
        [
            "## Calibration kernels (`benchmarks/bench_calibration_kernels.py`)",
            "",
            f"Machine: {machine()}. MobileNetV2-224 fp32 .tflite, batch 1, 1 thread, p50 of {args.runs} calls.",
            "",
            table(["interpreter", "p50"], [[name, f"{ms:.1f} ms"] for name, ms in rows]),
            "",
            "TensorFlow's calibrator feeds each representative sample through a logging interpreter on the builtin "
            "kernels (XNNPACK would hide the intermediate tensors it logs); bench_peer.py measures it at ~41 ms per "
            "sample. So about half of calibration is the builtin kernels being "
            f"{rows[1][1] / rows[0][1]:.1f}× slower than XNNPACK, the rest its min/max logging over every tensor; "
            "its Python wrapper takes no thread count.",
        ]
    )
    print(body)
    if not args.no_record:
        write_section("calibration-kernels", body)


if __name__ == "__main__":
    main()
