"""Sharded calibration writes the raw converter's bytes on zoo models: ``edgetool convert --quant int8`` with one
calibration process against the same command split over ``--workers`` processes (every model sharded however cheap
its samples: ``EDGETOOL_CALIBRATION_SHARD_SECONDS=0``), sha256 of both int8 files compared.

One process is TensorFlow's own ``Calibrator`` (byte-identical to ``TFLiteConverter``: tests/test_converter_fast_path.py).
Models are built with the zoo's builders into its cache (``benchmarks/.cache/zoo/models``; reused while their source
is unchanged), with the zoo's own int8 command (its calibration data). Writes the ``calibration-identity`` section.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_calibration_identity.py [--models a,b] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import machine, table, write_section

from benchmarks.zoo import cells as zcells
from benchmarks.zoo import models as zmodels
from benchmarks.zoo import store as zstore

QUICK = "tabular_mlp,regression_mlp,multi_input,multi_output,conv1d_audio,tfop_uint8,bn_after_act,embedding_lstm"


def int8(name: str, model: Path, out: Path, workers: int) -> tuple[str, str]:
    """(sha256 of the int8 .tflite, how the calibration was split) for one run of the zoo's int8 command."""
    spec = zmodels.SPECS[name]
    features = zcells.Features(convert_batch=True, demo_input_size=True)
    args = zcells.command("int8", model, out, spec, features, {})
    env = {
        **os.environ,
        "EDGETOOL_CALIBRATION_WORKERS": str(workers),
        "EDGETOOL_CALIBRATION_SHARD_SECONDS": "0",
        "EDGETOOL_VERBOSE": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_USE_LEGACY_KERAS": "0" if spec.keras3 else "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "edge_tool", *args, "--force"], env=env, capture_output=True, text=True
    )
    if proc.returncode:
        return "failed", (proc.stdout + proc.stderr).strip().splitlines()[-1][:200]
    files = sorted(out.rglob("*int8*.tflite"))
    how = [ln.split("calibration in ", 1)[1] for ln in proc.stderr.splitlines() if "calibration in " in ln]
    return hashlib.sha256(files[0].read_bytes()).hexdigest() if files else "no file", "; ".join(how) or "not logged"


def main() -> None:
    """Build, convert twice per model, compare, record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=QUICK)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    rows, same = [], True
    for name in args.models.split(","):
        model = zstore.CACHE / "models" / name
        if not zmodels.is_built(model):
            zmodels.build(name, model)
        with tempfile.TemporaryDirectory(prefix="calib-id-") as tmp:
            one, _ = int8(name, model, Path(tmp) / "one", 1)
            many, how = int8(name, model, Path(tmp) / "many", args.workers)
        ok = one == many and len(one) == 64
        same &= ok or "fell back" in how
        rows.append([f"`{name}`", one[:12], many[:12], how, "identical" if ok else "DIFFERENT"])
        print(rows[-1], flush=True)
    body = "\n".join(
        [
            "## Sharded calibration: same bytes on zoo models (`benchmarks/bench_calibration_identity.py`)",
            "",
            f"Machine: {machine()}. `edgetool convert --quant int8` (the zoo's int8 command and calibration data) with "
            f"one calibration process against {args.workers} (`EDGETOOL_CALIBRATION_SHARD_SECONDS=0`: every model "
            "sharded however cheap); sha256 of the int8 .tflite (first 12 hex digits).",
            "",
            table(["model", "1 process", f"{args.workers} processes", "calibration split", "bytes"], rows),
        ]
    )
    print(body)
    if not args.no_record:
        write_section("calibration-identity", body)
    if not same:
        raise SystemExit("some int8 files differ")


if __name__ == "__main__":
    main()
