// LiteRT.js profiling harness of benchmarks/bench_litertjs.py: one page load = one configuration
// (?build=compat|default|threaded|jspi&model=fp32|int8&threads=N&runs=R). Loads that wasm build, compiles the
// .tflite on the wasm (XNNPACK) accelerator, then times every step of the demo engine's runOne (engines/litert.js)
// separately, and model.run alone with the input tensor already in wasm memory. Result: window.__bench.
import { loadLiteRt, loadAndCompile, Tensor } from '@litertjs/core';

const FILES = { compat: 'litert_wasm_compat_internal.js', default: 'litert_wasm_internal.js',
  threaded: 'litert_wasm_threaded_internal.js', jspi: 'litert_wasm_jspi_internal.js' };
const STEPS = ['slice', 'toInput', 'tensor', 'run', 'read', 'fromOutput', 'delete'];

function seeded(n, seed) {
  let s = seed;
  return Float32Array.from({ length: n }, () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 1073741824 - 1; });
}

async function main() {
  const p = new URLSearchParams(window.location.search);
  const build = p.get('build');
  const runs = Number(p.get('runs') || 30);
  const threads = p.get('threads') ? Number(p.get('threads')) : null;
  const t0 = performance.now();
  const liteRt = await loadLiteRt(new URL(`litert/${FILES[build]}`, window.location.href).href);
  const tLoad = performance.now();
  const options = { accelerator: 'wasm' };
  if (threads) options.cpuOptions = { numThreads: threads };
  const model = await loadAndCompile(new URL(`${p.get('model')}.tflite`, window.location.href).href, options);
  const tCompile = performance.now();
  const [inp] = model.getInputDetails();
  const shape = Array.from(inp.shape);
  const n = shape.reduce((a, b) => a * b, 1);
  const xs = [seeded(n, 12345), seeded(n, 777)];
  const steps = Object.fromEntries(STEPS.map((s) => [s, []]));
  const total = [];
  let first = null;
  for (let i = 0; i < runs + 2; i++) { // the first 2 are warm-up (the very first is reported as `first`)
    const t = [performance.now()];
    const values = xs[i % 2].subarray(0, n); t.push(performance.now()); // the engine views one sample per batch row
    const typed = values instanceof Float32Array ? values : Float32Array.from(values); t.push(performance.now());
    const input = new Tensor(typed, shape); t.push(performance.now());
    const outputs = await model.run(input); t.push(performance.now());
    const raw = outputs[0].toTypedArray(); t.push(performance.now());
    const row = Float32Array.from(raw); t.push(performance.now());
    input.delete(); for (const o of outputs) o.delete(); t.push(performance.now());
    if (row.length === 0) throw new Error('empty output');
    if (i === 0) first = t[t.length - 1] - t[0];
    if (i < 2) continue;
    STEPS.forEach((s, k) => steps[s].push(t[k + 1] - t[k]));
    total.push(t[t.length - 1] - t[0]);
  }
  const input = new Tensor(xs[0], shape);
  const runOnly = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const outputs = await model.run(input);
    runOnly.push(performance.now() - t);
    for (const o of outputs) o.delete();
  }
  // for a CPU profile taken from outside (bench_litertjs.py --profile): n more runs of the same input
  window.__runMany = async (k) => {
    for (let i = 0; i < k; i++) for (const o of await model.run(input)) o.delete();
  };
  return { build, threads, loadMs: tLoad - t0, compileMs: tCompile - tLoad, firstMs: first, steps, total, runOnly,
    defaultThreads: liteRt.liteRtWasm.getThreadCount(), crossOriginIsolated: window.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency, inputDtype: inp.dtype };
}

window.__bench = main().catch((err) => ({ error: String(err && (err.stack || err.message || err)) }));
