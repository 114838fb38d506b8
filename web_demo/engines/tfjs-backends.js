// The TensorFlow.js backends of the tfjs engine: start them (wasm with its thread count), benchmark those worth it,
// switch between them. Uses the global `tf` (vendor/tf.min.js, tf-backend-wasm.min.js, tf-backend-webgpu.min.js).
import { allFinite, median } from '../postprocess.js';

export const BACKENDS = ['wasm', 'webgpu', 'webgl', 'cpu'];
// Micro-benchmark per backend: one untimed warm-up run (compiles kernels/shaders, moves the weights, starts the
// wasm threads), then timed runs until BENCH_MAX_RUNS or until BENCH_BUDGET_MS has passed (at least one).
const BENCH_MAX_RUNS = 10;
const BENCH_BUDGET_MS = 500;
// tfjs-backend-wasm's own ceiling: init_with_threads_count (tfjs-backend-wasm/src/cc/backend.cc) clamps the XNNPACK
// pool to at most 8 threads, the number of Web Workers its build pre-creates, and to hardwareConcurrency / 2.
export const MAX_THREADS = 8;
const CORES = navigator.hardwareConcurrency || 1;
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software|basic render/i;

// wasm threads (need cross-origin isolation; edgetool serve sends COOP/COEP): `asked` (?threads=N), else one per two
// logical cores, tfjs's own default. Every wasm operator is split across the pool and joined again, and each join
// waits for Web Workers to wake up, so on a loaded 2-core machine 2 threads ran slower than 1 (benchmarks/RESULTS.md,
// "Browser").
export function wasmThreads(asked, cores = CORES) {
  if (asked !== null) return Math.min(asked, cores, MAX_THREADS);
  return Math.max(1, Math.min(Math.floor(cores / 2), MAX_THREADS));
}

// The most threads the page's menu offers: one per core (up to MAX_THREADS), and at least the current count.
export const mostThreads = (current) => Math.max(current, Math.min(CORES, MAX_THREADS));

async function activate(name) {
  try {
    if (!(await tf.setBackend(name))) return false;
    await tf.ready();
    return tf.getBackend() === name;
  } catch (err) {
    console.warn(`backend ${name} unavailable:`, err);
    return false;
  }
}

// tfjs-backend-wasm caps its pool at hardwareConcurrency / 2 (assuming two hyper-threads per core), so ?threads=N
// above that would be ignored; it reads hardwareConcurrency once while the module starts, so show it twice the
// wanted count for that moment only.
async function startWasm(threads) {
  tf.wasm.setThreadsCount(threads);
  if (!window.crossOriginIsolated) return activate('wasm'); // single-threaded SIMD binary
  Object.defineProperty(navigator, 'hardwareConcurrency', { configurable: true, get: () => 2 * threads });
  try {
    return await activate('wasm');
  } finally {
    delete navigator.hardwareConcurrency; // back to Navigator.prototype's getter
  }
}

// Renderer of the webgl backend's context ('' when unknown); software rasterisers never beat wasm.
function glRenderer() {
  try {
    const gl = tf.backend().gpgpu.gl;
    const ext = gl.getExtension('WEBGL_debug_renderer_info');
    return String(gl.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  } catch (err) {
    return '';
  }
}

// The WebGPU adapter as 'vendor/architecture' (e.g. 'google/swiftshader'), or why there is none (then null).
export async function gpuAdapter(gpu = navigator.gpu) {
  if (!gpu) return { adapter: null, reason: 'no WebGPU in this browser (navigator.gpu is missing)' };
  try {
    const found = await gpu.requestAdapter();
    if (!found) return { adapter: null, reason: 'WebGPU gives no adapter here' };
    const info = found.info || {};
    return { adapter: `${info.vendor || 'unknown'}/${info.architecture || 'unknown'}`, reason: null };
  } catch (err) {
    return { adapter: null, reason: `WebGPU adapter request failed: ${err.message}` };
  }
}

// options: pageOptions (backend, threads). run(): one inference of zeros on the current backend -> {ms}.
// reload(): load the model again on the current backend (after another backend failed part-way through a run).
export function createBackends(options, run, reload = async () => {}) {
  // picked: how the backend was chosen: 'query' (?backend=NAME), 'benchmark' or 'remembered' (pick-cache.js)
  // gpu: {adapter, reason} of gpuAdapter() (the pick cache's key names the adapter)
  const state = { names: [], bench: {}, skipped: {}, glRenderer: null, wasmStarted: false, picked: null,
    nonFinite: [], gpu: { adapter: null, reason: null } };

  // The first switch to wasm starts it with the wanted thread count.
  async function trySet(name) {
    if (name === 'wasm' && !state.wasmStarted) {
      state.wasmStarted = true;
      return startWasm(wasmThreads(options.threads));
    }
    return activate(name);
  }

  // Why a working backend is not worth benchmarking while another one works (null: benchmark it).
  function skipReason(name) {
    if (name === 'cpu') return 'not benchmarked: plain-JS fallback, slower than wasm and webgl';
    if (name === 'webgl' && SOFTWARE_GL.test(state.glRenderer || '')) {
      return `not benchmarked: software-rendered WebGL (${state.glRenderer})`;
    }
    return null;
  }

  // Time-bounded micro-benchmark of the current backend: median ms of the timed runs after one warm-up run.
  // quick: the warm-up and one timed run only (nothing to compare against, so just leave the backend warm).
  // A backend whose warm-up gives NaN/Inf is noted in state.nonFinite (another backend that does not is preferred).
  async function timeCurrent(quick = false) {
    const warm = await run(); // warm-up: compiles kernels / shaders, moves the weights here, starts the wasm threads
    const name = tf.getBackend();
    if (!allFinite(warm.outputs)) {
      console.warn(`backend ${name} gives NaN/Inf outputs on a zero input; another backend is preferred`);
      if (!state.nonFinite.includes(name)) state.nonFinite.push(name);
    }
    const times = [];
    const deadline = performance.now() + BENCH_BUDGET_MS;
    do {
      times.push((await run()).ms);
    } while (!quick && times.length < BENCH_MAX_RUNS && performance.now() < deadline);
    return median(times);
  }

  // Backends measured so far whose warm-up outputs were finite.
  const finiteMeasured = () => Object.keys(state.bench).filter((name) => !state.nonFinite.includes(name));
  // What the pick chooses among: the finite ones, else every measured one (the status then warns).
  function trusted() {
    const finite = finiteMeasured();
    return finite.length ? finite : Object.keys(state.bench);
  }

  // The backends that initialise here (?backend=NAME: only that one, when it works); null: pick among all.
  async function initialise() {
    state.gpu = await gpuAdapter();
    const wanted = options.backend;
    const usable = BACKENDS.includes(wanted) && tf.findBackendFactory(wanted) && (await trySet(wanted));
    const forced = usable ? wanted : null;
    if (wanted && !forced) console.warn(`?backend=${wanted} is not available here; picking automatically`);
    for (const name of forced ? [forced] : BACKENDS) {
      if (name === 'webgpu' && !state.gpu.adapter) { state.skipped.webgpu = state.gpu.reason; continue; }
      if (!tf.findBackendFactory(name) || !(await trySet(name))) continue;
      if (name === 'webgl') state.glRenderer = glRenderer();
      state.names.push(name);
    }
    return forced;
  }

  // A remembered pick ({backend, bench, skipped}): switch to it and warm it up, benchmarking nothing.
  async function reuse(choice) {
    state.picked = 'remembered';
    state.bench = Object.fromEntries(Object.entries(choice.bench).filter(([name]) => state.names.includes(name)));
    state.skipped = choice.skipped;
    await trySet(choice.backend);
    await run(); // moves the weights there and compiles its kernels: warm
    return choice.backend;
  }

  // Initialise the backends, benchmark those worth it, switch to the fastest and leave it warm (weights on it,
  // kernels compiled), so the first user inference is a steady-state one. Resolves to the fastest one's name.
  // recall(names): the pick remembered for these working backends, or null (then they are benchmarked).
  async function pick(recall = () => null) {
    const forced = await initialise();
    const remembered = forced ? null : recall(state.names.slice());
    if (remembered) return reuse(remembered);
    state.picked = forced ? 'query' : 'benchmark';
    const worth = forced ? [forced] : state.names.filter((name) => !skipReason(name));
    const ranked = [...worth, ...state.names.filter((name) => !worth.includes(name))];
    let broken = false; // a backend failed part-way: the weights may be half-moved to it
    for (const name of ranked) {
      if (!worth.includes(name) && finiteMeasured().length) {
        state.skipped[name] = skipReason(name);
        continue;
      }
      try {
        await trySet(name);
        if (broken) await reload();
        broken = false;
        state.bench[name] = await timeCurrent(worth.length <= 1);
      } catch (err) {
        console.warn(`backend ${name} failed to run the model:`, err);
        state.names.splice(state.names.indexOf(name), 1);
        broken = true;
      }
    }
    const measured = trusted();
    if (!measured.length) throw new Error('no TensorFlow.js backend could run the model');
    const best = measured.reduce((a, b) => (state.bench[b] < state.bench[a] ? b : a));
    if (tf.getBackend() !== best) {
      await trySet(best);
      await run(); // moves the weights back: warm again
    }
    return best;
  }

  // Switch to one of the working backends and benchmark it (it is warm afterwards); resolves to tf.getBackend().
  async function switchTo(name) {
    if (!state.names.includes(name)) {
      throw new Error(`backend ${name} is not available here; choose one of ${state.names.join(', ')}`);
    }
    if (!(await trySet(name))) throw new Error(`could not switch to backend ${name}`);
    state.bench[name] = await timeCurrent();
    delete state.skipped[name];
    return tf.getBackend();
  }

  function runtime() {
    const info = { crossOriginIsolated: window.crossOriginIsolated === true,
      backend: typeof tf === 'undefined' ? null : tf.getBackend(), hardwareConcurrency: CORES, wasmThreads: null,
      webglRenderer: state.glRenderer || null, gpuAdapter: state.gpu.adapter, webgpuSkipped: state.gpu.reason };
    if (state.wasmStarted) { // (tf.findBackend would start the wasm backend)
      try { info.wasmThreads = tf.wasm.getThreadsCount(); } catch (err) { /* wasm failed to start */ }
    }
    return info;
  }

  return {
    get names() { return state.names.slice(); },
    get bench() { return { ...state.bench }; },
    get skipped() { return { ...state.skipped }; },
    get picked() { return state.picked; },
    get nonFinite() { return state.nonFinite.slice(); }, // backends whose warm-up gave NaN/Inf
    first: () => (BACKENDS.includes(options.backend) ? options.backend : BACKENDS[0]),
    trySet, pick, switchTo, runtime,
  };
}
