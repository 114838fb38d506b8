"""How long does `edgetool train --model lm` take, and what does it reach? (the quick start's budget: a minute or
two on 2 cores; the text must be recognisable)

Runs the command under each --strategy given (default: mirrored, the command's default) in a fresh process, and
records wall time, held-out perplexity per byte, next-byte accuracy and the printed sample in the `lm-train`
section of benchmarks/RESULTS.md, with the CPU, its SIMD flags and the load average before and after (a loaded
machine says so). Usage: .venv/bin/python benchmarks/bench_lm_train.py [--strategy mirrored ...] [--epochs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import machine, table, write_section

from edge_tool.lm.generate import decode_bytes, encode_bytes, generate
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import open_session
from edge_tool.training.kinds.lm import SAMPLE_PROMPT, SAMPLE_TOKENS

SIMD = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "amx_int8")


def simd_flags() -> str:
    """The SIMD flags of this CPU that TensorFlow's kernels may use."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return " ".join(f for f in SIMD if f in flags) or "none of " + ", ".join(SIMD)


def run(strategy: str, epochs: int | None, out: Path) -> dict:
    """One training run in a fresh process; its train.json plus the wall and CPU (user + sys) seconds and a greedy
    continuation of the sample prompt through the SavedModel's signatures."""
    cmd = [sys.executable, "-m", "edge_tool", "train", "--model", "lm", "--strategy", strategy, "-o", str(out)]
    cmd += [] if epochs is None else ["--epochs", str(epochs)]
    start, cpu0 = time.perf_counter(), _child_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    wall, cpu = time.perf_counter() - start, _child_cpu() - cpu0
    return {**json.loads((out / "train.json").read_text()), "wall": wall, "cpu": cpu, "greedy": greedy(out)}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def greedy(saved_model: Path) -> str:
    """The greedy continuation the train command's sample prompt gets from the SavedModel."""
    ids = generate(open_session(saved_model), encode_bytes(SAMPLE_PROMPT), SAMPLE_TOKENS, Sampler(temperature=0.0))
    return SAMPLE_PROMPT + decode_bytes(ids)


def main() -> None:
    """Measure, print and record."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", action="append", default=None)
    parser.add_argument("--epochs", type=int, default=None)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows, samples = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in args.strategy or ["mirrored"]:
            r = run(strategy, args.epochs, Path(tmp) / strategy)
            rows.append(
                [
                    strategy,
                    r["config"]["epochs"],
                    f"{r['wall']:.0f} s",
                    f"{r['cpu']:.0f} s (÷ {os.cpu_count()} = {r['cpu'] / (os.cpu_count() or 1):.0f} s)",
                    f"{r['eval_perplexity']:.2f}",
                    f"{r['eval_accuracy']:.3f}",
                ]
            )
            s = r["sample"]
            samples.append(
                f"- {strategy} (temperature {s['temperature']}, top-k {s['top_k']}, seed {s['seed']}): "
                f"`{(s['prompt'] + s['text']).replace(chr(10), ' / ')}`"
            )
            samples.append(f"- {strategy} (greedy): `{r['greedy'].replace(chr(10), ' / ')}`")
    body = (
        "## Training the bundled LM (`benchmarks/bench_lm_train.py`)\n\n"
        f"Machine: {machine()}; SIMD: {simd_flags()}. Load average {load_before:.1f} before and "
        f"{os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores"
        + (" — **loaded**: other jobs shared the cores, so the times are upper bounds." if load_before > 1 else ".")
        + "\n\n"
        + table(
            [
                "strategy",
                "epochs",
                "wall (train + export + sample)",
                "CPU user + sys (÷ cores: idle wall if all kept busy)",
                "held-out perplexity / byte",
                "next-byte acc",
            ],
            rows,
        )
        + "\n\nSamples, generated through the SavedModel's prefill/decode signatures:\n\n"
        + "\n".join(samples)
        + "\n"
    )
    print(body)
    write_section("lm-train", body)


if __name__ == "__main__":
    main()
