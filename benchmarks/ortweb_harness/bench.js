// onnxruntime-web harness of benchmarks/bench_ortweb.py: one page load = one configuration
// (?model=fp32|int8&threads=N&runs=R). Loads ort.wasm (the SIMD + threads build, ort-wasm-simd-threaded.wasm),
// creates an InferenceSession on the 'wasm' execution provider, then times new ort.Tensor + session.run + a float32
// copy of the output (what the demo engine's runOne does around model.run). Result: window.__bench.
import * as ort from './ort/ort.wasm.min.mjs';

function seeded(n, seed) { // the same generator as litertjs_harness/bench.js
  let s = seed;
  return Float32Array.from({ length: n }, () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 1073741824 - 1; });
}

async function main() {
  const p = new URLSearchParams(window.location.search);
  const runs = Number(p.get('runs') || 30);
  const threads = Number(p.get('threads') || 1);
  ort.env.wasm.wasmPaths = new URL('ort/', window.location.href).href;
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.simd = true;
  ort.env.wasm.proxy = false;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(new URL(`${p.get('model')}.onnx`, window.location.href).href, {
    executionProviders: ['wasm'], graphOptimizationLevel: 'all', executionMode: 'sequential' });
  const tCreate = performance.now();
  const name = session.inputNames[0];
  const shape = [1, 224, 224, 3];
  const n = shape.reduce((a, b) => a * b, 1);
  const xs = [seeded(n, 12345), seeded(n, 777)];
  const step = async (x) => {
    const out = await session.run({ [name]: new ort.Tensor('float32', x, shape) });
    const row = Float32Array.from(out[session.outputNames[0]].data);
    for (const t of Object.values(out)) t.dispose();
    return row;
  };
  let first = null;
  let row0 = null;
  const total = [];
  for (let i = 0; i < runs + 2; i++) { // the first 2 are warm-up (the very first is reported as `first`)
    const t = performance.now();
    const row = await step(xs[i % 2]);
    const ms = performance.now() - t;
    if (row.length !== 1000) throw new Error(`expected 1000 outputs, got ${row.length}`);
    if (i === 0) { first = ms; row0 = Array.from(row); }
    if (i >= 2) total.push(ms);
  }
  // for a CPU profile taken from outside (bench_ortweb.py): k more runs of the same input
  window.__runMany = async (k) => { for (let i = 0; i < k; i++) await step(xs[0]); };
  return { threads, createMs: tCreate - t0, firstMs: first, total, output0: row0, numThreads: ort.env.wasm.numThreads,
    crossOriginIsolated: window.crossOriginIsolated, hardwareConcurrency: navigator.hardwareConcurrency };
}

window.__bench = main().catch((err) => ({ error: String(err && (err.stack || err.message || err)) }));
