"""MobileNetV2-224 fixed-batch-1 .tflite files (fp32 and int8) for bench_litertjs.py, cached under benchmarks/.cache/.

LiteRT.js cannot run a variable batch, so both are built by ``edgetool convert --batch 1 --quant fp32,int8`` from
the seeded random-weight SavedModel of _browser_models.py, calibrated on 32 seeded uniform [-1, 1] inputs (int8 keeps
float32 I/O, like ``edgetool demo --litert``). Built once, in a temp dir renamed into place.
Run ``python benchmarks/_litertjs_models.py`` to build them ahead of the benchmark.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_models import CACHE, INPUT, _cached, mobilenet_artefacts

CAL_SAMPLES = 32


def _build_b1(saved: Path):
    def build(out: Path) -> None:
        out.mkdir()
        cal = out.parent / "calibration.npz"
        x = np.random.default_rng(0).uniform(-1, 1, (CAL_SAMPLES, *INPUT)).astype(np.float32)
        np.savez(cal, x=x)
        cmd = [
            sys.executable,
            "-m",
            "edge_tool",
            "convert",
            str(saved),
            "-o",
            str(out / "tflite"),
            "--batch",
            "1",
            "--quant",
            "fp32,int8",
            "--calibration",
            str(cal),
            "--samples",
            str(CAL_SAMPLES),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
        for mode in ("fp32", "int8"):
            found = sorted((out / "tflite").rglob(f"*{mode}*.tflite"))
            if len(found) != 1:
                raise RuntimeError(f"expected one {mode} .tflite from edgetool convert, found {found}")
            found[0].rename(out / f"{mode}.tflite")

    return build


def b1_tflites(cache: Path = CACHE) -> dict[str, Path]:
    """{'fp32': path, 'int8': path}: the batch-1 MobileNetV2 .tflite files, built on first use."""
    saved, _, _ = mobilenet_artefacts(cache)
    root = _cached(cache / "b1", _build_b1(saved))
    return {mode: root / f"{mode}.tflite" for mode in ("fp32", "int8")}


if __name__ == "__main__":
    for mode, path in b1_tflites().items():
        print(mode, path)
