"""QAT vs int8 PTQ vs float on small models of several shapes: ``python benchmarks/qat_shapes/run.py WORKDIR [NAME...]``.

Builds each model (``build.py``, in its own process), runs ``edgetool convert --quant qat --eval-data`` on it and
prints a markdown table from the manifests: float / int8 PTQ / QAT accuracy on eval.npz and which one shipped.
Models: tfop_uint8 bn_after_relu dyn_hw mlp_cancer mlp_wine resnet_bn mnv3 effnet multi_io lstm (lstm is refused).
CPU-only, minutes per model (mnv3 / effnet: ~10+ on a loaded 2-core machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NAMES = (
    "tfop_uint8",
    "bn_after_relu",
    "dyn_hw",
    "mlp_cancer",
    "mlp_wine",
    "resnet_bn",
    "mnv3",
    "effnet",
    "multi_io",
    "lstm",
)


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO)


def row(work: Path, name: str) -> str:
    """Build (if missing) and convert one model; its table row."""
    model = work / "models" / name
    if not model.exists():
        built = _run([str(HERE / "build.py"), name, str(work / "models")])
        if built.returncode != 0:
            return f"| {name} | build failed: {built.stderr.strip().splitlines()[-1]} |||||"
    out = work / "out" / name
    proc = _run(
        [
            "-m",
            "edge_tool",
            "convert",
            str(model),
            "--quant",
            "qat",
            "--train-data",
            str(model / "train.npz"),
            "--eval-data",
            str(model / "eval.npz"),
            "-o",
            str(out),
            "--force",
        ]
    )
    if proc.returncode != 0:
        reason = next(
            (ln for ln in proc.stdout.splitlines() + proc.stderr.splitlines() if "error" in ln.lower()),
            f"exit {proc.returncode}",
        )
        return f"| {name} | refused (exit {proc.returncode}): {reason.strip()[:120]} |||||"
    q = json.loads((out / "manifest.json").read_text())["artifacts"][0]["qat"]
    a = q["accuracy"]

    def show(v):
        return "–" if v is None else f"{v:.4f}"

    return (
        f"| {name} | {show(a['float'])} | {show(a['ptq_int8'])} | {show(a['qat'])} | {q['shipped']} | "
        f"{len(q['training']['folded'])} folds, {len(q['training']['float_layers'])} float layers |"
    )


def main(argv: list[str]) -> int:
    work = Path(argv[0])
    print("| model | float | int8 PTQ | QAT | shipped | notes |\n|---|---|---|---|---|---|")
    for name in argv[1:] or NAMES:
        print(row(work, name), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
