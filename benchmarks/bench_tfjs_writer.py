"""edgetool's TensorFlow.js writer against tensorflowjs 4.22's converter, on the same SavedModels.

For each model: both graph models are written (edgetool: ``edge_tool.tfjs_writer.export.export_tfjs``, self-check
included; tensorflowjs: ``convert_tf_saved_model``, when the package is importable in this venv), then each is run
by tfjs 4.22 in Node (wasm backend, cpu where wasm lacks a kernel) on 8 seeded random inputs against TensorFlow
(max abs error, top-1 agreement), sized (model.json + shards), and timed: Node (batch 1, execute + dataSync,
median of 30 after 5 warm-up calls) and headless Chromium (the same, tfjs wasm backend, single-threaded SIMD build:
the page is not cross-origin isolated). Models: MobileNetV2-224 (weights=None, seeded), a conv/batch-norm/
hard-swish/LayerNormalization block, a Keras-3 causal MultiHeadAttention (issue 35) and an LSTM classifier.

Usage: .venv/bin/python benchmarks/bench_tfjs_writer.py [--skip-browser]   (writes the 'tfjs-writer' section of
benchmarks/RESULTS.md; about 5 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._browser_common import CHROMIUM, FLAGS
from benchmarks._results import machine, table, write_section
from edge_tool.models.signatures import load_serving_fn
from edge_tool.nodejs.tfjs_session import TfjsSession, tfjs_bundle_path, wasm_backend_dir
from edge_tool.tfjs_writer.export import export_tfjs
from tests.test_tfjs_writer import _CAUSAL_SCRIPT, _LN_HS_SCRIPT

CACHE = Path(__file__).resolve().parent / ".cache" / "tfjs-writer"
ROUNDS = 2  # latency rounds; the table shows the best round's median
_MOBILENET_SCRIPT = """
import sys, tf_keras as keras
keras.utils.set_random_seed(0)
model = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
model.save(sys.argv[1], save_format="tf", include_optimizer=False)
"""
_LSTM_SCRIPT = """
import sys, tf_keras as keras
keras.utils.set_random_seed(0)
inp = keras.Input((20, 8), name="seq")
x = keras.layers.LSTM(32)(inp)
keras.Model(inp, keras.layers.Dense(4, activation="softmax", name="probs")(x)).save(sys.argv[1], save_format="tf")
"""
PAGE = """<!doctype html><script src="tf.min.js"></script><script src="tf-backend-wasm.min.js"></script><script>
window.bench = async (model, shape, runs) => {
  tf.wasm.setWasmPaths(location.href.replace(/[^/]*$/, ''));
  await tf.setBackend('wasm'); await tf.ready();
  const m = await tf.loadGraphModel(model);
  const x = tf.randomUniform(shape);
  const once = async () => { const r = await m.executeAsync(x); (Array.isArray(r) ? r : [r]).forEach(t => {
    t.dataSync(); t.dispose(); }); };
  for (let i = 0; i < 5; i++) await once();
  const ms = [];
  for (let i = 0; i < runs; i++) { const t0 = performance.now(); await once(); ms.push(performance.now() - t0); }
  return ms;
};
</script>"""


def simd_flags() -> str:
    """The SIMD extensions /proc/cpuinfo lists (what wasm SIMD and TensorFlow's kernels can use)."""
    try:
        flags = next(ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile")
    return " ".join(f for f in wanted if f in flags) or "none of SSE4/AVX"


def _built(name: str, script: str, legacy: bool) -> Path:
    out = CACHE / name
    if not out.exists():
        env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if legacy else "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
        subprocess.run([sys.executable, "-c", script, str(out)], check=True, env=env, timeout=900)
    return out


def models() -> dict[str, Path]:
    """name -> SavedModel directory (built once under benchmarks/.cache/tfjs-writer)."""
    return {
        "MobileNetV2-224": _built("mobilenetv2", _MOBILENET_SCRIPT, True),
        "conv+BN+hard-swish+LayerNorm": _built("ln_hs", _LN_HS_SCRIPT, True),
        "Keras-3 causal MHA": _built("causal", _CAUSAL_SCRIPT, False),
        "LSTM(32)": _built("lstm", _LSTM_SCRIPT, True),
    }


def tensorflowjs_export(saved: Path, out: Path) -> str | None:
    """tensorflowjs' own conversion into ``out``; None when it worked, else why not."""
    try:
        from tensorflowjs.converters import tf_saved_model_conversion_v2 as conv
    except ImportError as exc:
        return f"tensorflowjs not importable ({exc})"
    try:
        conv.convert_tf_saved_model(str(saved), str(out))
    except Exception as exc:  # the baseline's failure is a table cell
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    return None


def node_figures(model_dir: Path, saved: Path) -> dict:
    """Max abs error and top-1 agreement against TensorFlow on 8 seeded inputs, and Node latency (ms, median)."""
    _, fn, _ = load_serving_fn(saved)
    spec = json.loads((model_dir / "model.json").read_text())["signature"]["inputs"]
    ((key, entry),) = spec.items()
    shape = [1] + [int(d["size"]) for d in entry["tensorShape"]["dim"][1:]]
    x = np.random.default_rng(0).uniform(0, 1, [8, *shape[1:]]).astype(np.float32)
    want = {k: np.asarray(v, np.float64) for k, v in fn(**{key: x}).items()}
    for backend in ("wasm", "cpu"):
        try:
            with TfjsSession(model_dir / "model.json", backend=backend) as session:
                got = session.predict({key: x})
            break
        except Exception as exc:  # a backend that cannot run the file: try the next, or report
            error = str(exc)
    else:
        return {"error": error[:80]}
    (name,) = want
    out = next(iter(got.values())) if name not in got else got[name]
    return {
        "max_abs": float(np.abs(out - want[name]).max()),
        "top1": float((out.argmax(-1) == want[name].argmax(-1)).mean()),
        "backend": session.backend,
        "x1": {key: x[:1]},
        "shape": shape,
    }


def node_ms(model_dir: Path, backend: str, x1: dict) -> float:
    """Median Node latency (ms) of batch-1 calls: 30 timed after 5 warm-up calls."""
    with TfjsSession(model_dir / "model.json", backend=backend) as session:
        session.predict(x1)
        return statistics.median(session.latency(x1, warmup=5, runs=30, time_budget_s=None))


def size_bytes(model_dir: Path) -> int:
    return sum(p.stat().st_size for p in model_dir.iterdir() if p.is_file())


def browser_ms(root: Path, dirs: dict[str, Path], shapes: dict[str, list]) -> dict[str, float]:
    """Median Chromium latency (ms) per model directory under ``root`` (served over loopback HTTP)."""
    from playwright.sync_api import sync_playwright

    vendor = wasm_backend_dir()
    for f in ("tf.min.js", "tf-backend-wasm.min.js", "tfjs-backend-wasm.wasm", "tfjs-backend-wasm-simd.wasm"):
        (root / f).write_bytes((tfjs_bundle_path() if f == "tf.min.js" else vendor / f).read_bytes())
    (root / "index.html").write_text(PAGE)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    out = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for label, d in dirs.items():
                page = browser.new_page()
                page.goto(url + "index.html")
                try:
                    ms = page.evaluate(f"bench('{d.relative_to(root).as_posix()}/model.json', {shapes[label]}, 30)")
                    out[label] = statistics.median(ms)
                except Exception as exc:  # a model the browser cannot run: a cell
                    out[label] = f"fails: {str(exc).splitlines()[0][:60]}"
                page.close()
            browser.close()
    finally:
        server.shutdown()
    return out


def main() -> None:
    """Write both graph models per model, measure them, print the table and write the RESULTS.md section."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--skip-browser", action="store_true")
    opts = args.parse_args()
    rows, work = [], Path(tempfile.mkdtemp(prefix="bench-tfjs-"))
    dirs, shapes, figures = {}, {}, {}
    for name, saved in models().items():
        slug = "".join(c if c.isalnum() else "_" for c in name)
        for writer in ("edgetool", "tensorflowjs"):
            out = work / f"{slug}-{writer}"
            t0 = time.perf_counter()
            try:
                if writer == "edgetool":
                    export_tfjs(saved, out)
                    failed = None
                else:
                    failed = tensorflowjs_export(saved, out)
            except Exception as exc:  # edgetool's refusal is a cell too
                failed = f"{type(exc).__name__}: {str(exc)[:80]}"
            seconds = time.perf_counter() - t0
            fig = {"error": failed} if failed else node_figures(out, saved)
            fig.update(seconds=seconds, size=size_bytes(out) if out.exists() else 0, dir=out)
            figures[(name, writer)] = fig
            if "shape" in fig:
                dirs[f"{name}/{writer}"], shapes[f"{name}/{writer}"] = out, fig["shape"]
    for _ in range(ROUNDS):  # rounds alternate the writers, so a busy moment does not land on one of them only
        for fig in figures.values():
            if "x1" in fig:
                fig.setdefault("node", []).append(node_ms(fig["dir"], fig["backend"], fig["x1"]))
    webs = [] if opts.skip_browser else [browser_ms(work, dirs, shapes) for _ in range(ROUNDS)]
    web = {k: min((w[k] for w in webs if isinstance(w[k], float)), default=webs[0][k]) for k in webs[0]} if webs else {}
    for (name, writer), fig in figures.items():
        if "error" in fig:
            rows.append([name, writer, f"{fig['seconds']:.1f}", "–", "–", "–", "–", fig["error"]])
            continue
        ms = web.get(f"{name}/{writer}", "–")
        rows.append(
            [
                name,
                writer,
                f"{fig['seconds']:.1f}",
                f"{fig['size'] / 1e6:.2f}",
                f"{fig['max_abs']:.1e} / {fig['top1']:.2f}",
                f"{min(fig['node']):.1f} ({fig['backend']})",
                f"{ms:.1f}" if isinstance(ms, float) else ms,
                "",
            ]
        )
    headers = ["model", "writer", "export s", "MB", "max abs err / top-1 vs TF", "Node ms", "Chromium ms", "note"]
    body = (
        "## TFJS writer: edgetool vs tensorflowjs 4.22\n\n"
        f"Written by `benchmarks/bench_tfjs_writer.py`. Machine: {machine()}; SIMD: {simd_flags()}. Both files run "
        "by tfjs 4.22.0 (vendored): Node = wasm backend (cpu where wasm lacks a kernel), batch 1, median of 30 "
        "after 5 warm-up calls, best of 2 alternating rounds; Chromium = headless, wasm SIMD single-threaded, same timing. Errors against "
        "TensorFlow on 8 seeded uniform [0, 1) inputs. Export seconds include edgetool's self-check in Node. MobileNetV2 has "
        "random weights (weights=None): its softmax is near-uniform, so its error column says little.\n\n"
        + table(headers, rows)
    )
    print(body)
    write_section("tfjs-writer", body)


if __name__ == "__main__":
    main()
