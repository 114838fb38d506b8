"""Host vs device: the same .tflite files evaluated on this host and on the emulated aarch64 board of the device
tests (tests/device_board.py: Debian arm64 + tflite-runtime 2.14 under qemu-user, over a real sshd), with one
``edgetool eval --device`` per model.

Models: the digits CNN (load_digits, trained a few epochs) and MobileNetV2 (alpha 0.35, 96x96, random seeded weights,
random inputs: accuracy is meaningless there, drift is not), each fp32 and int8 (int8 I/O) from the raw
TFLiteConverter. Besides eval's drift and latency rows, the raw int8 outputs of host LiteRT and the board's
tflite_runtime are compared directly (plain interpreters, no edgetool code): rows that differ and the largest
difference in int8 steps. Latency on the board is qemu's, not a Cortex-A figure (the report says so too).

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
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

import device_board  # noqa: E402
from _results import machine, table, write_section  # noqa: E402

_BUILD = """
import sys, numpy as np, tensorflow as tf, tf_keras as keras
from sklearn.datasets import load_digits
o, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
keras.utils.set_random_seed(0)
if kind == "digits":
    d = load_digits()
    x = (d.images / 16.0).astype("float32").reshape(-1, 8, 8, 1)
    inp = keras.Input((8, 8, 1), name="image")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    m = keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="probs")(keras.layers.Flatten()(h)))
    m.compile("adam", "sparse_categorical_crossentropy")
    m.fit(x[:1200], d.target[:1200], epochs=4, batch_size=32, verbose=0)
    xe, ye, cal = x[1200:1200 + n], d.target[1200:1200 + n], x[:100]
    np.savez(o + "/eval.npz", x=xe, y=ye)
else:
    m = keras.applications.MobileNetV2(weights=None, alpha=0.35, input_shape=(96, 96, 3), classes=10)
    rng = np.random.default_rng(0)
    xe, cal = rng.uniform(-1, 1, (n, 96, 96, 3)).astype("float32"), rng.uniform(-1, 1, (32, 96, 96, 3)).astype("float32")
    m.compile("adam", "sparse_categorical_crossentropy")  # one epoch on random labels: BatchNorm statistics move,
    m.fit(rng.uniform(-1, 1, (64, 96, 96, 3)).astype("float32"), rng.integers(0, 10, 64), epochs=1, verbose=0)
    np.savez(o + "/eval.npz", x=xe)
m.save(o + "/model", save_format="tf")
np.save(o + "/x.npy", xe)
open(o + "/fp32.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model(o + "/model").convert())
c = tf.lite.TFLiteConverter.from_saved_model(o + "/model")
c.optimizations = [tf.lite.Optimize.DEFAULT]
c.representative_dataset = lambda: ([cal[i:i + 1]] for i in range(len(cal)))
c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
c.inference_input_type = c.inference_output_type = tf.int8
open(o + "/int8.tflite", "wb").write(c.convert())
"""

# raw int8 outputs, one sample per invoke: run by the host's LiteRT and by the board's tflite_runtime
_RAW = """
import sys, numpy as np
try:
    from ai_edge_litert.interpreter import Interpreter
except ImportError:
    from tflite_runtime.interpreter import Interpreter
d = sys.argv[1]
x = np.load(d + "/x.npy")
it = Interpreter(model_path=d + "/int8.tflite")
it.allocate_tensors()
i, o = it.get_input_details()[0], it.get_output_details()[0]
sc, z = i["quantization"]
ys = []
for k in range(len(x)):
    it.set_tensor(i["index"], np.clip(np.round(x[k:k + 1] / sc + z), -128, 127).astype(np.int8))
    it.invoke()
    ys.append(it.get_tensor(o["index"]).copy())
np.save(d + "/" + sys.argv[2] + ".npy", np.concatenate(ys))
"""


def build(kind: str, n: int, out: Path) -> None:
    """The model, its fp32/int8 .tflite files and eval data in ``out``."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run([sys.executable, "-c", _BUILD, str(out), kind, str(n)], check=True, env=env, capture_output=True)


def evaluate(board, work: Path, runs: int) -> list[dict]:
    """eval's rows: host fp32, host int8, board fp32, board int8."""
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
            "--device",
            board.url,
            "--runs",
            str(runs),
            "--warmup",
            "3",
            "--json",
            report,
        ],
        env={**os.environ, "EDGETOOL_SSH_CONFIG": str(board.ssh_config)},
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    return json.loads(report.read_text())["results"]


def raw_int8_diff(board, work: Path) -> tuple[int, int, int]:
    """(rows whose raw int8 outputs differ, rows, largest difference in int8 steps): host LiteRT vs the board."""
    subprocess.run([sys.executable, "-c", _RAW, str(work), "host"], check=True, capture_output=True)
    there = board.root / "tmp" / f"bench-{work.name}"
    there.mkdir()
    try:
        for name in ("int8.tflite", "x.npy"):
            (there / name).write_bytes((work / name).read_bytes())
        proc = board.ssh(f"python3 -c '{_RAW}' /tmp/{there.name} board", timeout=1800)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        board_y = np.load(there / "board.npy").astype(np.int32)
    finally:
        subprocess.run(["rm", "-rf", str(there)], check=False)
    host_y = np.load(work / "host.npy").astype(np.int32)
    diff = np.abs(host_y - board_y).reshape(len(host_y), -1).max(axis=1)
    return int((diff > 0).sum()), len(diff), int(diff.max(initial=0))


def rows_for(name: str, results: list[dict], raw: tuple[int, int, int]) -> list[list]:
    """Table rows: per artefact, host then board."""
    out = []
    for k, quant in enumerate(("fp32", "int8")):
        for where, r in (("host x86_64", results[k]), ("board aarch64 (qemu)", results[2 + k])):
            lat = r.get("latency_ms") or {}
            acc = r.get("accuracy")
            out.append(
                [
                    name,
                    quant,
                    where,
                    r.get("failed") or f"{r['top1_agreement']:.3f}",
                    "—" if acc is None else f"{acc:.3f}",
                    f"{r['max_abs_error']:.2e}" if r.get("max_abs_error") is not None else "—",
                    f"{lat.get('p50', 0):.2f}",
                    f"{lat.get('p90', 0):.2f}",
                    f"{lat.get('cold_start', 0):.0f}",
                    f"{raw[0]}/{raw[1]} rows, ≤{raw[2]} steps" if quant == "int8" and "board" in where else "",
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
    """Build the board and the models, run eval with --device, print and record the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--digits", type=int, default=120)
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    why = device_board.missing() or device_board.binfmt_problem()
    if why:
        sys.exit(f"cannot build the emulated board: {why}")
    root = device_board.build(device_board.cache_dir())
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        board = device_board.start(root, home)
        rows = []
        try:
            for name, kind, n in (
                ("digits CNN", "digits", args.digits),
                ("MobileNetV2 α0.35 96²", "mobilenet", args.images),
            ):
                work = Path(tmp) / kind
                work.mkdir()
                build(kind, n, work)
                rows += rows_for(name, evaluate(board, work, args.runs), raw_int8_diff(board, work))
        finally:
            board.stop()
    headers = [
        "model",
        "file",
        "where",
        "agreement",
        "accuracy",
        "max |Δ| vs reference",
        "p50 ms",
        "p90 ms",
        "cold start ms",
        "int8 raw outputs ≠ host",
    ]
    body = table(headers, rows)
    print(body)
    write_section(
        "device",
        "## Host vs emulated board (`benchmarks/bench_device.py`)\n\n"
        f"Host: {machine()}; SIMD: {simd_flags()}; load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end (2 cores). Board: Debian bookworm arm64, tflite-runtime 2.14, "
        "numpy 1.26, under qemu-user on the same host (its latency is the emulator's: not a "
        "performance figure of any ARM CPU). Same files, same samples, one `edgetool eval --device` per "
        f"model; {args.runs} timed runs after 3 warm-up calls; digits: {args.digits} labelled samples, "
        f"MobileNetV2: {args.images} random images (random weights moved by one epoch on random labels: accuracy meaningless, drift not). "
        "The last column compares raw int8 outputs of host LiteRT and the board's tflite_runtime "
        "directly (plain interpreters).\n\n" + body,
    )


if __name__ == "__main__":
    main()
