"""Host vs devices: the same .tflite files evaluated on this host and on the two emulated boards of the device
tests (tests/device_board.py, over real sshds): aarch64 (Debian bookworm arm64, Python 3.11, tflite-runtime 2.14)
and 32-bit armv7l (Debian bullseye armhf, Python 3.9, Debian's numpy 1.19, tflite-runtime 2.11), with one
``edgetool eval --device A --device B`` per model.

Models: the digits CNN (load_digits, trained a few epochs) and MobileNetV2 (alpha 0.35, 96x96, random seeded weights,
random inputs: accuracy is meaningless there, drift is not), each fp32 and int8 (int8 I/O) from the raw
TFLiteConverter. Besides eval's rows:
- the raw int8 outputs of host LiteRT and each board's tflite_runtime compared directly (plain interpreters, no
  edgetool code): rows that differ and the largest difference in int8 steps, beside eval's own spread figures;
- a plain timing loop run on each board by hand (ssh + the board's tflite_runtime: set_tensor, invoke, get_tensor,
  one thread, the same warm-up and runs), whose p50 eval's device p50 should match within 10 %.
Latency on a board is qemu's, not an ARM CPU's (the report says so too).

Usage: .venv/bin/python benchmarks/bench_device.py [--digits 120] [--images 16] [--runs 20]
Needs root, qemu-user-static, debootstrap and openssh-server (as the device tests).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _device_programs import _BUILD, _LOOP, _RAW  # noqa: E402
from _results import machine, table, write_section  # noqa: E402

from tests import device_board  # noqa: E402

WARMUP = 3


def build(kind: str, n: int, out: Path) -> None:
    """The model, its fp32/int8 .tflite files and eval data in ``out``."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run([sys.executable, "-c", _BUILD, str(out), kind, str(n)], check=True, env=env, capture_output=True)


def evaluate(boards: list, work: Path, runs: int) -> list[dict]:
    """eval's rows: host fp32, host int8, then fp32 and int8 on each board."""
    report = work / "r.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "edge_tool",
            "eval",
            work / "fp32.tflite",
            work / "int8.tflite",
            "-r",
            work / "model",
            "-d",
            work / "eval.npz",
            *(a for b in boards for a in ("--device", b.url)),
            "--runs",
            str(runs),
            "--warmup",
            str(WARMUP),
            "--json",
            report,
        ],
        env={**os.environ, "EDGETOOL_SSH_CONFIG": str(ssh_config(boards, work))},
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    return json.loads(report.read_text())["results"]


def ssh_config(boards: list, work: Path) -> Path:
    """One client config reaching every board (the 32-bit one by its Host alias)."""
    cfg = work / "ssh_config"
    cfg.write_text("".join(b.ssh_config.read_text() for b in boards))
    return cfg


def on_board(board, work: Path, program: str, args: str, files=("int8.tflite", "x.npy")) -> str:
    """Run ``program`` with the board's own python3 over plain ssh in a fresh directory holding ``files``; its
    stdout (a ``board.npy`` it wrote is copied back as ``board-MACHINE.npy``; the directory is removed)."""
    there = board.root / "tmp" / f"bench-{work.name}-{board.recipe.machine}"
    there.mkdir()
    there.chmod(0o777)  # the 32-bit board's login is not root
    try:
        for name in files:
            (there / name).write_bytes((work / name).read_bytes())
        proc = board.ssh(f"python3 -c '{program}' /tmp/{there.name} {args}", timeout=3600)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        if (there / "board.npy").exists():
            (work / f"board-{board.recipe.machine}.npy").write_bytes((there / "board.npy").read_bytes())
        return proc.stdout.decode()
    finally:
        subprocess.run(["rm", "-rf", str(there)], check=False)


def plain_p50(board, work: Path, name: str, runs: int) -> float:
    """p50 ms of the plain loop run on ``board`` by hand (no edgetool code)."""
    return float(on_board(board, work, _LOOP, f"{name} {WARMUP} {runs}", (name, "x.npy")).split()[-1])


def raw_int8_diff(board, work: Path) -> tuple[int, int, int]:
    """(rows whose raw int8 outputs differ, rows, largest difference in int8 steps): host LiteRT vs the board."""
    subprocess.run([sys.executable, "-c", _RAW, str(work), "host"], check=True, capture_output=True)
    on_board(board, work, _RAW, "board")
    board_y = np.load(work / f"board-{board.recipe.machine}.npy").astype(np.int32)
    host_y = np.load(work / "host.npy").astype(np.int32)
    diff = np.abs(host_y - board_y).reshape(len(host_y), -1).max(axis=1)
    return int((diff > 0).sum()), len(diff), int(diff.max(initial=0))


def rows_for(name: str, boards: list, results: list[dict], raws: list, loops: list) -> list[list]:
    """Table rows: per artefact, host then each board (with the plain loop's p50 and eval's spread)."""
    out = []
    for k, quant in enumerate(("fp32", "int8")):
        places = [("host x86_64", results[k], None, None)]
        places += [
            (
                f"{b.recipe.machine} (qemu), {results[2 + 2 * j + k]['runtime']}",
                results[2 + 2 * j + k],
                raws[j],
                loops[j][k],
            )
            for j, b in enumerate(boards)
        ]
        for where, r, raw, loop in places:
            lat = r.get("latency_ms") or {}
            acc, spread = r.get("accuracy"), r.get("spread") or {}
            p50 = lat.get("p50", 0)
            out.append(
                [
                    name,
                    quant,
                    where,
                    r.get("failed") or f"{r['top1_agreement']:.3f}",
                    "—" if acc is None else f"{acc:.3f}",
                    f"{r['max_abs_error']:.2e}" if r.get("max_abs_error") is not None else "—",
                    f"{p50:.3f}",
                    "" if loop is None else f"{loop:.3f} ({100 * (p50 / loop - 1):+.1f} %)",
                    f"{lat.get('cold_start', 0):.0f}",
                    f"{raw[0]}/{raw[1]} rows, ≤{raw[2]} steps" if quant == "int8" and raw else "",
                    f"{spread['samples_differing']}/{spread['samples']} rows, ≤{spread['max_steps']} steps"
                    if quant == "int8" and spread
                    else "",
                ]
            )
    return out


def simd_flags() -> str:
    """The SIMD flags of this CPU that matter to LiteRT's kernels."""
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    return (
        " ".join(
            f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags
        )
        or "none listed"
    )


def main() -> None:
    """Build the boards and the models, run eval with both --device, the plain loops, print and record the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--digits", type=int, default=120)
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    recipes = (device_board.ARM64, device_board.ARMHF)
    for recipe in recipes:
        why = device_board.missing(recipe) or device_board.binfmt_problem(recipe)
        if why:
            sys.exit(f"cannot build the emulated board: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        boards, rows = [], []
        try:
            for recipe in recipes:
                home = Path(tmp) / f"home-{recipe.machine}"
                home.mkdir()
                root = device_board.private_root(device_board.prepare(recipe), "bench")  # no test meets its runners
                boards.append(device_board.start(root, home, recipe=recipe))
            for name, kind, n in (
                ("digits CNN", "digits", args.digits),
                ("MobileNetV2 α0.35 96²", "mobilenet", args.images),
            ):
                work = Path(tmp) / kind
                work.mkdir()
                build(kind, n, work)
                results = evaluate(boards, work, args.runs)
                raws = [raw_int8_diff(b, work) for b in boards]
                loops = [[plain_p50(b, work, f"{q}.tflite", args.runs) for q in ("fp32", "int8")] for b in boards]
                rows += rows_for(name, boards, results, raws, loops)
                print("\n".join(" | ".join(map(str, r)) for r in rows[-2 * (1 + len(boards)) :]), flush=True)
        finally:
            for b in boards:
                b.stop()
                device_board.remove_private(b.root)
    headers = [
        "model",
        "file",
        "where",
        "agreement",
        "accuracy",
        "max |Δ| vs reference",
        "eval p50 ms",
        "plain loop p50 ms (eval vs loop)",
        "cold start ms",
        "int8 raw outputs ≠ host (direct)",
        "eval's spread vs host row",
    ]
    body = table(headers, rows)
    print(body)
    write_section(
        "device",
        "## Host vs emulated boards (`benchmarks/bench_device.py`)\n\n"
        f"Host: {machine()}; SIMD: {simd_flags()}; load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} cores). Boards, both **emulated** with qemu-user on "
        "this same host (their latency is the emulator's on this x86 CPU: not a performance figure of any ARM "
        "CPU): aarch64 = Debian bookworm arm64, Python 3.11, tflite-runtime 2.14, numpy 1.26; armv7l = Debian "
        "bullseye armhf, Python 3.9, Debian's numpy 1.19, tflite-runtime 2.11, a non-root login behind an ssh "
        "alias. Same files, same samples, one `edgetool eval --device A --device B` per model; "
        f"{args.runs} timed runs after {WARMUP} warm-up calls; digits: {args.digits} labelled samples, MobileNetV2: "
        f"{args.images} random images (random weights moved by one epoch on random labels: accuracy meaningless, "
        "drift not). 'plain loop' is the same timed unit (set_tensor + invoke + get_tensor, 1 thread, first "
        "sample) run on the board by hand with its tflite_runtime, no edgetool code, right after eval; the "
        "percentage is eval's p50 against it. The raw-output column compares int8 outputs of host LiteRT and "
        "each board's tflite_runtime directly (plain interpreters, one sample per invoke); the last is eval's own "
        "spread figure for the same pair (batched as eval batches).\n\n" + body,
    )


if __name__ == "__main__":
    main()
