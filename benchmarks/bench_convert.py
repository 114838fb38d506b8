"""`edgetool convert --format all` vs the same conversions run back to back with the raw APIs, on MobileNetV2-224.

Raw = in one fresh process: for each of fp32, fp16, dynamic, int8, int16x8 ``tf.lite.TFLiteConverter.from_saved_model``
+ that mode's settings + ``convert()``, then ``tensorflowjs`` ``convert_tf_saved_model``. edgetool = ``python -m
edge_tool convert MODEL --format all`` in a fresh process. Both get the same SavedModel
(tf_keras.applications.MobileNetV2(weights=None), seed 0, saved as a Keras-2 SavedModel) and the same 64 seeded
uniform [-1, 1] calibration inputs (what MobileNetV2 expects); they run alternately ``--repeats`` times and the
medians are compared. Then, per mode, the artefact sizes, whether the bytes are identical, and the LiteRT p50 latency
at 1 thread (edge_tool.evaluate.latency, a fresh process per measurement, raw and edgetool alternating, medians).

The model and data are cached in benchmarks/.cache (gitignored). Writes the ``convert`` section of
benchmarks/RESULTS.md.

Usage: .venv/bin/python benchmarks/bench_convert.py [--repeats 3] [--skip-latency] [--latency-runs 200] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_section  # noqa: E402
from convert_compare import compare, section  # noqa: E402

from tests.oracles.raw_converter import MODES, raw_converter  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
MODEL = CACHE / "mobilenetv2"
CALIBRATION = CACHE / "calibration.npz"
SAMPLES = 64
ENV = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "TFDF_DISABLE_WELCOME_MESSAGE": "1"}


# ---------------------------------------------------------------- child processes (--_build, --_raw)


def build_model() -> None:
    """MobileNetV2-224 (random seeded weights) as a Keras-2 SavedModel, and the calibration inputs."""
    import tensorflow  # noqa: F401
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
    model.save(str(MODEL), save_format="tf", include_optimizer=False)
    x = np.random.default_rng(0).uniform(-1, 1, (SAMPLES, 224, 224, 3)).astype(np.float32)
    np.savez(CALIBRATION, x=x)


def raw_convert(out: Path) -> None:
    """The raw baseline: every mode with TFLiteConverter.from_saved_model, then tensorflowjs; prints JSON timings."""
    t_start = time.perf_counter()
    import tensorflow as tf

    timings = {"import": time.perf_counter() - t_start}
    x = np.load(CALIBRATION)["x"]

    def representative_dataset():
        for i in range(len(x)):
            yield [x[i : i + 1]]

    out.mkdir(parents=True, exist_ok=True)
    for mode in MODES:
        t0 = time.perf_counter()
        conv = raw_converter(tf, MODEL, mode, representative_dataset)
        (out / f"mobilenetv2_{mode}.tflite").write_bytes(conv.convert())
        timings[mode] = time.perf_counter() - t0
    t0 = time.perf_counter()
    from tensorflowjs.converters import tf_saved_model_conversion_v2 as tfjs_conv

    tfjs_conv.convert_tf_saved_model(
        str(MODEL),
        str(out / "tfjs"),
        signature_def="serving_default",
        saved_model_tags="serve",
        weight_shard_size_bytes=4 * 1024 * 1024,
    )
    timings["tfjs"] = time.perf_counter() - t0
    print(json.dumps(timings))


# ---------------------------------------------------------------- the parent (no TensorFlow here)


def _run(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return seconds, proc


def run_raw(out: Path) -> tuple[float, dict]:
    """Wall seconds of the raw baseline in a fresh process, and its per-phase timings."""
    seconds, proc = _run([sys.executable, __file__, "--_raw", str(out)])
    return seconds, json.loads(proc.stdout.strip().splitlines()[-1])


def run_edgetool(out: Path) -> tuple[float, dict]:
    """Wall seconds of ``edgetool convert --format all`` in a fresh process, and its manifest's timings."""
    seconds, _ = _run(
        [
            sys.executable,
            "-m",
            "edge_tool",
            "convert",
            str(MODEL),
            "--format",
            "all",
            "--calibration",
            str(CALIBRATION),
            "--samples",
            str(SAMPLES),
            "-o",
            str(out),
            "--force",
        ]
    )
    return seconds, json.loads((out / "manifest.json").read_text())["timings_s"]


def main() -> None:
    """Build (once), time raw vs edgetool alternately, compare artefacts, print and record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs of each side (medians reported)")
    ap.add_argument("--skip-latency", action="store_true", help="skip the per-mode LiteRT latency comparison")
    ap.add_argument("--latency-runs", type=int, default=200, help="timed invokes per latency measurement")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached MobileNetV2 SavedModel")
    ap.add_argument("--_build", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_raw", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._build:
        return build_model()
    if args._raw:
        return raw_convert(args._raw)

    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    if args.rebuild or not (MODEL / "saved_model.pb").is_file() or not CALIBRATION.is_file():
        print("building MobileNetV2 SavedModel …", flush=True)
        _run([sys.executable, __file__, "--_build"])
    raw_out, edge_out = CACHE / "raw_out", CACHE / "edgetool_out"
    walls = {"raw": [], "edgetool": []}
    phases = {"raw": [], "edgetool": []}
    for r in range(args.repeats):
        order = ("raw", "edgetool") if r % 2 == 0 else ("edgetool", "raw")
        for side in order:
            seconds, timing = run_raw(raw_out) if side == "raw" else run_edgetool(edge_out)
            walls[side].append(seconds)
            phases[side].append(timing)
            print(
                f"run {r + 1} {side:8s} {seconds:6.1f} s  " + " ".join(f"{k} {v:.1f}" for k, v in timing.items()),
                flush=True,
            )
    rows = compare(raw_out, edge_out, phases, args.repeats, None if args.skip_latency else args.latency_runs)
    body = section(rows, walls, args.repeats, args.latency_runs)
    print()
    print(body)
    write_section("convert", body)


if __name__ == "__main__":
    main()
