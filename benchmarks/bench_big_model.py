"""Peak memory and wall time of edgetool on a ~400 MB model (issue 43, "big models"), beside the raw tools.

Builds in a temp dir (never committed) a tf_keras SavedModel Flatten(32x32x3) -> Dense(32768, relu) -> Dense(10)
(404 MB of float32 weights) and 64 seeded samples, then runs each command in a fresh process under GNU time
(``/usr/bin/time -v``: the peak resident set of the largest process of the tree, e.g. Node's self-check beside
Python) and reports peak RSS, wall time, peak / the SavedModel's bytes, and whether the budget (peak <= 3x the
SavedModel's bytes) is met. Baselines: TFLiteConverter.from_saved_model (fp32, int8 with the same 64 samples) and a
plain eval script (TensorFlow on the samples, the two .tflite files in LiteRT, batch 1). Memory figures are robust
to other load on the machine; wall times are not (the load is printed with the table).

Usage: .venv/bin/python benchmarks/bench_big_model.py [--only NAME,NAME]   (writes the 'big-model' section of
benchmarks/RESULTS.md; about 10 minutes on 2 cores; with --only, the rows named are measured again and replace
theirs, marked "(rerun)", the other rows stay as the last full run wrote them)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._results import RESULTS, load_line, machine, simd_flags, table, write_section

BUDGET = 3.0  # peak RSS <= BUDGET x the SavedModel's bytes
EDGETOOL = [str(Path(sys.executable).with_name("edgetool"))]
NOTES = (
    "Before the streaming TF.js writer (commit 7cd7f25, same model, same GNU time): `edgetool convert --format tfjs` "
    "8.92 GB, 104 s; `demo` 8.9 GB (issue 43's figure; demo's peak is the writer's). After it and before the release "
    "of the loaded SavedModel around grappler: 1.47 GB (3.6x) for both. Where the writer's peak goes now (one process, "
    "RSS sampled around each step): 0.53 GB the TensorFlow runtime after import, +0.43 GB the loaded SavedModel "
    "(its variables: the shards are streamed from them, and the self-check compares with its signature), +0.01 GB "
    "the shards. Grappler's constant folding tests every Const for all-zeros/all-ones (ConstantFolding::IsZeros/"
    "IsOnes -> AllValuesAre -> Tensor::FromProto), which expands a big weight's one-value stand-in into a tensor of "
    "the weight's size (0.40 GB here) through TensorFlow's allocator, whose oneDNN pool (MklCPUAllocator, a BFC "
    "allocator) keeps the memory for the process's life; the writer now lets the loaded SavedModel go before "
    "grappler runs and loads it again after, so the expansion and then the reloaded variables reuse the memory the "
    "first load's variables freed (the second load: 0.8 s here). The Node self-check (its own process) "
    "reads the shards one weight at a time into a buffer of that weight's size and makes it a tensor (tfjs' "
    "loadGraphModel joined every shard into one buffer and copied each weight out of it: three copies, 1.26 GB for "
    "this model); its peak is the wasm heap plus the biggest weight's buffer (0.87 GB). Python waits while Node "
    "runs, so the tree's sum is both. With `--tfjs-quant float16` (or uint8/uint16) a big weight is encoded a block "
    "of rows at a time and the self-check's reference graph is fed its decoded values (one array, aligned so "
    "TensorFlow does not copy it) instead of holding them as a Const TensorFlow copies several times: 7.44 GB, 27 s "
    "before (GNU time, the same model; uint8 7.43 GB), the same bytes; the decoded array beside the loaded "
    "variables is what remains above 3x there. Node decodes such a weight with tfjs' decodeWeights a block of rows "
    "at a time into one array (1.24 GB -> 0.91 GB sampled for float16). The TFLite converter by itself needs more than the budget (rows 1-2: fp32, "
    "and int8 with 64 calibration samples); `convert --quant fp32,int8` peaks near the raw int8 run's figure. `eval` stays below a plain script's peak; its extra wall time is the latency loops (100 timed "
    "calls per model in fresh processes) the plain script does not run."
)
_BUILD = """
import sys, numpy as np, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((32, 32, 3), name="image")
x = keras.layers.Dense(32768, activation="relu")(keras.layers.Flatten()(inp))
keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="probs")(x)).save(sys.argv[1], save_format="tf")
rng = np.random.default_rng(0)
np.savez(sys.argv[2], x=rng.uniform(0, 1, (64, 32, 32, 3)).astype(np.float32), y=rng.integers(0, 10, 64))
"""
_RAW = """
import sys, numpy as np, tensorflow as tf
sm, out, mode = sys.argv[1:4]
x = np.load(sys.argv[4])["x"]
conv = tf.lite.TFLiteConverter.from_saved_model(sm)
if mode == "int8":
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([x[i : i + 1]] for i in range(len(x)))
open(out, "wb").write(conv.convert())
"""
_PLAIN_EVAL = """
import sys, numpy as np, tensorflow as tf
from ai_edge_litert.interpreter import Interpreter
sm, data, files = sys.argv[1], sys.argv[2], sys.argv[3:]
x = np.load(data)["x"]
fn = tf.saved_model.load(sm).signatures["serving_default"]
want = np.concatenate([next(iter(fn(image=tf.constant(x[i : i + 16])).values())).numpy() for i in range(0, len(x), 16)])
for f in files:
    it = Interpreter(model_path=f); it.allocate_tensors()
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    got = []
    for s in x:
        q = s[None]
        if i["dtype"] != np.float32:
            sc, zp = i["quantization"]; q = np.clip(np.round(q / sc + zp), -128, 127).astype(i["dtype"])
        it.set_tensor(i["index"], q); it.invoke(); r = it.get_tensor(o["index"]).astype(np.float32)
        if o["dtype"] != np.float32:
            sc, zp = o["quantization"]; r = (r - zp) * sc
        got.append(r)
    got = np.concatenate(got)
    print(f, float(np.abs(got - want).max()), float((got.argmax(1) == want.argmax(1)).mean()))
"""


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                found += _tree(int(child))
    except OSError:
        pass
    return found


def _rss(pid: int) -> tuple[str, int]:
    """(command name, resident bytes) of one process; ("", 0) once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "", 0
    rss = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:")), 0)
    return status[0].split()[-1], rss


def timed(cmd: list[str], log: Path) -> tuple[float | None, float, str, int]:
    """(peak RSS in bytes of the largest process in the tree as GNU time reports it, wall seconds, the name of the
    process the samples saw largest, the largest sum over the tree at one sample) of ``cmd``; peak None when the
    command failed (its log says why). The tree is sampled every 50 ms from /proc."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    top, top_name, tree_sum = 0, "", 0
    while proc.poll() is None:
        sizes = [_rss(pid) for pid in _tree(proc.pid)[1:]]  # not GNU time itself
        tree_sum = max(tree_sum, sum(rss for _, rss in sizes))
        for name, rss in sizes:
            if rss > top:
                top, top_name = rss, name
        time.sleep(0.05)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    log.write_text(out + err)
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    return (int(found.group(1)) * 1024 if proc.returncode == 0 and found else None), wall, top_name, tree_sum


def commands(work: Path) -> dict[str, list[str]]:
    """name -> command line, in the order they run (later ones read what earlier ones wrote)."""
    sm, data = str(work / "sm"), str(work / "data.npz")
    py = [sys.executable, "-c"]
    return {
        "raw converter fp32": [*py, _RAW, sm, str(work / "raw_fp32.tflite"), "fp32", data],
        "raw converter int8 (64 samples)": [*py, _RAW, sm, str(work / "raw_int8.tflite"), "int8", data],
        "edgetool convert --quant fp32,int8": [
            *EDGETOOL,
            "convert",
            sm,
            "--quant",
            "fp32,int8",
            "--calibration",
            data,
            "-o",
            str(work / "conv"),
        ],
        "edgetool convert --format tfjs": [*EDGETOOL, "convert", sm, "--format", "tfjs", "-o", str(work / "tfjs")],
        "edgetool convert --format tfjs --tfjs-quant float16": [
            *EDGETOOL,
            "convert",
            sm,
            "--format",
            "tfjs",
            "--tfjs-quant",
            "float16",
            "-o",
            str(work / "tfjs16"),
        ],
        "edgetool demo": [*EDGETOOL, "demo", sm, "-o", str(work / "site")],
        "edgetool eval (fp32 + int8 .tflite)": [
            *EDGETOOL,
            "eval",
            str(work / "raw_fp32.tflite"),
            str(work / "raw_int8.tflite"),
            "-r",
            sm,
            "-d",
            data,
            "--json",
            str(work / "eval.json"),
        ],
        "plain eval script (fp32 + int8 .tflite)": [
            *py,
            _PLAIN_EVAL,
            sm,
            data,
            str(work / "raw_fp32.tflite"),
            str(work / "raw_int8.tflite"),
        ],
    }


def _section() -> str:
    """The big-model section of RESULTS.md as the last run wrote it ("" when there is none)."""
    text = RESULTS.read_text() if RESULTS.exists() else ""
    return text.partition("<!-- big-model:start -->")[2].partition("<!-- big-model:end -->")[0]


def merged(rows: list[list]) -> list[list]:
    """The RESULTS.md section's rows with ``rows`` (an ``--only`` run) in place of theirs by command name, each
    rerun row marked "(rerun)"; the others stay as the last full run measured them."""
    old = [[c.strip() for c in line.strip().strip("|").split("|")] for line in _section().splitlines()]
    old = [r for r in old if len(r) == len(rows[0]) and r[0] not in ("command", "---") and not r[0].startswith("-")]
    new = {r[0]: [f"{r[0]} (rerun)", *r[1:]] for r in rows}
    kept = [new.pop(r[0].removesuffix(" (rerun)"), r) for r in old]
    return kept + list(new.values())


def saved_model_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main() -> None:
    """Build the model, run every command, print the table and write the RESULTS.md section."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--only", default="", help="comma list of row names (substring match) to run")
    opts = args.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-big-"))
    try:
        env_build = [sys.executable, "-c", _BUILD, str(work / "sm"), str(work / "data.npz")]
        subprocess.run(env_build, check=True, capture_output=True, env={**os.environ, "TF_USE_LEGACY_KERAS": "1"})
        size = saved_model_bytes(work / "sm")
        rows = []
        for name, cmd in commands(work).items():
            wanted = [w for w in opts.only.split(",") if w]
            if wanted and not any(w in name for w in wanted):
                continue
            peak, wall, largest, tree_sum = timed(cmd, work / f"{len(rows)}.log")
            if peak is None:
                print(f"{name}: FAILED\n{(work / f'{len(rows)}.log').read_text()[-1500:]}", file=sys.stderr)
                rows.append([name, "failed", "-", "-", f"{wall:.0f}", "-", "-"])
                continue
            met = "yes" if peak <= BUDGET * size else "no"
            cells = [f"{peak / 1e9:.2f}", largest, f"{tree_sum / 1e9:.2f}", f"{wall:.0f}", f"{peak / size:.1f}x", met]
            rows.append([name, *cells])
            print(rows[-1], flush=True)
        previous = re.search(r"load [\d.]+ / [\d.]+ / [\d.]+ on \d+ CPUs", _section()) if opts.only else None
        full_load = previous[0] if previous else load_line()
        if opts.only:
            rows = merged(rows)
        headers = ["command", "peak RSS (GB)", "largest process", "tree sum (GB)", "wall (s)", "peak / SavedModel"]
        body = table([*headers, f"<= {BUDGET:g}x"], rows)
        head = (
            f"Written by `benchmarks/bench_big_model.py` (rerun: `.venv/bin/python benchmarks/bench_big_model.py`). "
            f"Model: Flatten(32x32x3) -> Dense(32768) -> Dense(10), SavedModel {size / 1e6:.0f} MB; 64 samples. "
            "Peak RSS is GNU time's maximum resident set of the largest process in the command's tree (a Node "
            "self-check beside Python counts separately, not summed); the largest process and the tree's sum (every "
            "process at once, Node beside Python included) come from /proc samples every 50 ms; one run each. "
            f"Machine: {machine()}; SIMD: {simd_flags()}; {full_load} at the end: the machine was shared with "
            "other helpers' work, so wall times are indicative only (memory figures are not affected by load)."
        )
        if opts.only:
            head += f" Rows marked (rerun) were measured again alone (`--only {opts.only}`, {load_line()} at its end)."
        print(body)
        text = "## Big model: peak memory and time (issue 43)\n\n" + head + "\n\n" + body + "\n\n" + NOTES
        write_section("big-model", text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
