"""`edgetool eval` at scale: MobileNetV2-224 fp32 + int8 on 10,000 samples, peak RSS of the process tree and samples/s.

Builds tf_keras.applications.MobileNetV2(weights=None) (seed 0, no download) as a SavedModel and converts it to
fp32 and int8 .tflite with ``edge_tool.convert.api.convert`` (32 calibration samples); all three are cached under
benchmarks/.cache/ (gitignored). Writes N seeded random uint8 images (N x 224 x 224 x 3 = 1.5 GB for 10,000) plus
random labels as an uncompressed .npz (streamed to disk, never whole in memory; ``--format npy`` writes a label-free
.npy instead); the model takes float32, so the eval casts each batch. Then runs ``edgetool eval`` in a subprocess,
polls the RSS of its whole process tree (psutil, every 0.1 s; the LiteRT latency workers included) and records
wall time, samples/s and the peak in the ``eval-scale`` section of benchmarks/RESULTS.md. The data file is deleted
at the end unless --keep.

Usage: .venv/bin/python benchmarks/bench_eval_scale.py [--samples 10000] [--runs 10] [--format npz|npy] [--keep]
       [--code-dir DIR]  (run the eval from another checkout of the package, e.g. an older one, for before/after)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import psutil

from edge_tool.convert.api import convert
from edge_tool.convert.config import ConvertConfig
from edge_tool.core.env import import_tf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import machine, table, write_section  # noqa: E402

CACHE = ROOT / "benchmarks" / ".cache"
SHAPE = (224, 224, 3)
CHUNK = 250  # samples generated and written at a time (37 MB of uint8)


def build_model(out: Path) -> None:
    """MobileNetV2-224, random seeded weights, saved as a Keras-2 SavedModel with serving_default."""
    import_tf()
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=SHAPE, classes=1000)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp), save_format="tf", include_optimizer=False)
    tmp.rename(out)


def images(n: int, seed: int):
    """Seeded uint8 images, CHUNK at a time."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, CHUNK):
        yield rng.integers(0, 256, (min(CHUNK, n - start), *SHAPE), dtype=np.uint8)


def _write_npy_stream(f, n: int, seed: int) -> None:
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False, "shape": (n, *SHAPE)}
    np.lib.format.write_array_header_1_0(f, header)
    for chunk in images(n, seed):
        f.write(chunk.tobytes())


def write_data(path: Path, n: int, fmt: str, seed: int = 1) -> None:
    """N images (+ labels for npz) written chunk by chunk: the benchmark itself never holds the data either."""
    tmp = path.with_name(path.name + ".tmp")
    if fmt == "npy":
        with open(tmp, "wb") as f:
            _write_npy_stream(f, n, seed)
    else:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            with zf.open("x.npy", "w", force_zip64=True) as f:
                _write_npy_stream(f, n, seed)
            with zf.open("y.npy", "w") as f:
                np.lib.format.write_array(f, np.random.default_rng(seed + 1).integers(0, 1000, n))
    tmp.rename(path)


def prepare_models() -> tuple[Path, dict[str, Path]]:
    """Cached SavedModel and fp32/int8 .tflite (built on first use)."""
    saved = CACHE / "mobilenetv2"
    if not (saved / "saved_model.pb").is_file():
        print("building MobileNetV2 SavedModel ...", flush=True)
        build_model(saved)
    out_dir = CACHE / "eval-scale-tflite"
    want = {m: out_dir / f"mobilenetv2_{m}.tflite" for m in ("fp32", "int8")}
    if not all(p.is_file() for p in want.values()):
        cal = CACHE / "eval-scale-calibration.npz"
        np.savez(cal, x=next(images(32, seed=7)))
        print("converting fp32 + int8 (32 calibration samples) ...", flush=True)
        result = convert(
            ConvertConfig(
                model=saved, output_dir=out_dir, modes=("fp32", "int8"), calibration=cal, samples=32, force=True
            )
        )
        want = {m: result.tflite(m) for m in ("fp32", "int8")}
    return saved, want


def run_measured(cmd: list[str], env: dict) -> tuple[int, float, float, float, str]:
    """(exit code, wall s, peak RSS MB of the whole tree, peak RSS MB of the main process, output tail).

    Runs in benchmarks/.cache/ so that the current directory does not shadow a --code-dir checkout.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=CACHE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    root = psutil.Process(proc.pid)
    peak_tree = peak_main = 0
    lines: list[str] = []

    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            main = root.memory_info().rss
            tree = main + sum(_rss(c) for c in root.children(recursive=True))
        except psutil.NoSuchProcess:
            break
        peak_main, peak_tree = max(peak_main, main), max(peak_tree, tree)
        time.sleep(0.1)
    proc.wait()
    wall = time.perf_counter() - t0
    reader.join(timeout=5)
    return proc.returncode, wall, peak_tree / 2**20, peak_main / 2**20, "".join(lines)[-3000:]


def _rss(p: psutil.Process) -> int:
    try:
        return p.memory_info().rss
    except psutil.NoSuchProcess:
        return 0


def main() -> None:
    """Prepare (cached), write the data, run eval under an RSS poller, print and record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=10, help="timed latency calls per model")
    ap.add_argument("--format", choices=("npz", "npy"), default="npz", help="npz has labels; npy is memory-mapped")
    ap.add_argument("--keep", action="store_true", help="keep the data file in benchmarks/.cache/")
    ap.add_argument("--code-dir", type=Path, help="put this checkout first on PYTHONPATH for the eval run")
    ap.add_argument("--no-record", action="store_true", help="print only; do not write RESULTS.md")
    args = ap.parse_args()

    CACHE.mkdir(parents=True, exist_ok=True)
    need = args.samples * int(np.prod(SHAPE)) + (1 << 30)
    free = shutil.disk_usage(CACHE).free
    if free < need:
        sys.exit(f"not enough disk space in {CACHE}: {free / 1e9:.1f} GB free, need {need / 1e9:.1f} GB")
    saved, tflites = prepare_models()
    data = CACHE / f"eval-scale-{args.samples}.{args.format}"
    if not data.is_file():
        print(f"writing {args.samples} samples to {data} ...", flush=True)
        write_data(data, args.samples, args.format)
    report = CACHE / "eval-scale-report.json"
    cmd = [
        sys.executable,
        "-m",
        "edge_tool",
        "eval",
        *map(str, tflites.values()),
        "-r",
        str(saved),
        "-d",
        str(data),
        "--runs",
        str(args.runs),
        "--warmup",
        "2",
        "--json",
        str(report),
        "--force",
    ]
    env = dict(os.environ)
    if args.code_dir:
        env["PYTHONPATH"] = os.pathsep.join([str(args.code_dir.resolve()), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    print("running:", " ".join(cmd), flush=True)
    try:
        code, wall, peak_tree, peak_main, out = run_measured(cmd, env)
    finally:
        if not args.keep:
            data.unlink(missing_ok=True)
    if code != 0:
        sys.exit(f"edgetool eval exited {code}:\n{out}")
    doc = json.loads(report.read_text())
    rate = args.samples / wall
    rows = [
        [
            args.samples,
            f"{data.suffix} uint8 ({args.samples * int(np.prod(SHAPE)) / 1e9:.2f} GB)",
            len(doc["results"]),
            f"{wall:.0f} s",
            f"{rate:.1f}",
            f"{peak_tree:.0f} MB",
            f"{peak_main:.0f} MB",
        ]
    ]
    per_art = [
        [
            r["artifact"],
            r["quant"],
            f"{100 * r['top1_agreement']:.2f}%",
            f"{r['max_abs_error']:.2e}",
            f"{r['latency_ms']['p50']:.1f} ms",
        ]
        for r in doc["results"]
    ]
    label = f" (code from {args.code_dir})" if args.code_dir else ""
    body = "\n".join(
        [
            f"## eval at scale (`benchmarks/bench_eval_scale.py`){label}",
            "",
            f"Machine: {machine()}. MobileNetV2-224 (random weights, seed 0) fp32 + int8 .tflite against the SavedModel, "
            f"`edgetool eval` on {args.samples} seeded random uint8 images cast to float32 per batch, {args.runs} timed "
            "latency runs per model. Wall time covers the whole command (TensorFlow start-up, one streaming pass: "
            "reference in batches of 16 (EvalConfig.batch_size) on half the cores, each .tflite batched in its own "
            "LiteRT worker process, the workers taking turns on the other half meanwhile, then the latency loops); "
            "samples/s = samples / wall time. "
            "Peak RSS polled every 0.1 s over the whole process tree (eval + its LiteRT workers). The machine is "
            "shared, so times are noisy.",
            "",
            table(
                ["samples", "data", "artefacts", "wall", "samples/s", "peak RSS (tree)", "peak RSS (eval process)"],
                rows,
            ),
            "",
            table(["artefact", "mode", "top-1 agreement", "max abs err", "LiteRT p50"], per_art),
        ]
    )
    print(body)
    if not args.no_record:
        write_section("eval-scale", body)


if __name__ == "__main__":
    main()
