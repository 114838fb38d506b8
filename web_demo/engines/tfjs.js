// The TensorFlow.js engine: the converted graph model (model/model.json) on the fastest working tfjs backend.
// Uses the global `tf` (vendor/tf.min.js + vendor/tf-backend-wasm.min.js, classic scripts before the page modules).
import { zeroFeeds } from '../config.js';
import { PROB_TOLERANCE } from '../postprocess.js';
import { timeLoop } from './engine.js';
import { modelHash } from './pick-cache.js';
import { createBackends, mostThreads } from './tfjs-backends.js';

// One flat typed array for tf.tensor: typed arrays of the right type are used as they are (no JS-array detour).
function toTyped(values, dtype) {
  if (dtype === 'int32') {
    return values instanceof Int32Array ? values : Int32Array.from(values, (v) => Math.round(Number(v)));
  }
  return values instanceof Float32Array ? values : Float32Array.from(values, Number);
}

const disposeAll = (tensors) => tensors.forEach((t) => t.dispose());

// config: config.describe(...); options: config.pageOptions(...). See engines/engine.js for the interface.
export function createTfjsEngine(config, options) {
  const { inputs, outputs } = config;
  const graph = { model: null, useExecuteAsync: false, hash: null, artifacts: null };

  // Graph models without control flow run synchronously (execute); models with dynamic ops need executeAsync.
  // feeds: {graph tensor name: tf.Tensor}; returns one tensor per output head, in `outputs` order.
  async function execute(feeds) {
    const names = outputs.map((o) => o.tensor);
    if (!graph.useExecuteAsync) {
      try {
        const y = graph.model.execute(feeds, names);
        return Array.isArray(y) ? y : [y];
      } catch (err) {
        if (!/executeAsync/.test(String(err && err.message))) throw err;
        graph.useExecuteAsync = true;
      }
    }
    const y = await graph.model.executeAsync(feeds, names);
    return Array.isArray(y) ? y : [y];
  }

  function tensorFeeds(feeds) {
    return Object.fromEntries(inputs.map((inp) => {
      const { values, shape } = feeds[inp.name];
      return [inp.tensor, tf.tensor(toTyped(values, inp.tfjsDtype), shape, inp.tfjsDtype)];
    }));
  }

  async function run(feeds) {
    const start = performance.now();
    const xs = tensorFeeds(feeds);
    let ys = [];
    const heads = {};
    try {
      ys = await execute(xs);
      for (let i = 0; i < outputs.length; i++) {
        heads[outputs[i].name] = { shape: ys[i].shape, values: Array.from(await ys[i].data()) };
      }
    } finally {
      disposeAll(Object.values(xs));
      disposeAll(ys);
    }
    return { outputs: heads, ms: performance.now() - start, backend: tf.getBackend(), engine: 'tfjs' };
  }

  // A backend that fails part-way through a run can leave the weights half-moved to it (their data gone):
  // load the model afresh, on the backend now active, before trying the next one.
  async function reload() {
    try {
      if (graph.model) graph.model.dispose();
    } catch (err) {
      console.warn('could not free the model after a failed backend:', err);
    }
    graph.model = await tf.loadGraphModel(tf.io.fromMemory(graph.artifacts));
    graph.useExecuteAsync = false;
  }

  const backends = createBackends(options, () => run(zeroFeeds(inputs)), reload);

  // Fetch the weights while the first backend initialises (wasm: compile the binary, start its threads).
  async function load(mark = () => {}) {
    tf.enableProdMode();
    tf.wasm.setWasmPaths(new URL(config.wasmPath, window.location.href).href);
    const [artifacts] = await Promise.all([tf.io.http(config.modelUrl).load(), backends.trySet(backends.first())]);
    mark('backendInit');
    graph.artifacts = artifacts;
    graph.model = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
    graph.hash = await modelHash(artifacts);
    mark('model');
  }

  async function time(runs, warmup) {
    const xs = tensorFeeds(zeroFeeds(inputs));
    try {
      const times = await timeLoop(async () => {
        const ys = await execute(xs);
        await Promise.all(ys.map((y) => y.data()));
        return () => disposeAll(ys);
      }, runs, warmup);
      return { backend: tf.getBackend(), engine: 'tfjs', times };
    } finally {
      disposeAll(Object.values(xs));
    }
  }

  // The backend pick (tfjs-backends.js), remembered through `memory` (engines/pick.js: recall(names) -> the
  // remembered entry or null; save(entry)) -> the picked backend, warm.
  async function choose(memory) {
    const best = await backends.pick((names) => memory.recall(names));
    if (backends.picked === 'benchmark') memory.save(choice());
    return best;
  }

  // What the pick memory keeps of this engine: its backend and the backend micro-benchmark.
  const choice = () => ({ backend: tf.getBackend(), bench: backends.bench, skipped: backends.skipped });

  const threads = () => backends.runtime().wasmThreads;

  return {
    name: 'tfjs',
    get label() { return `TensorFlow.js ${tf.version.tfjs}`; },
    get title() { return `TensorFlow.js ${tf.version.tfjs} (${tf.getBackend()} backend)`; },
    get backend() { return tf.getBackend(); },
    get shortName() { return tf.getBackend(); },
    probTolerance: PROB_TOLERANCE,
    backends,
    choose,
    choice,
    switchBackend: (name) => backends.switchTo(name),
    // the wasm threads select: {current, most} (null: the wasm backend did not start)
    get threads() { return threads() === null ? null : { current: threads(), most: mostThreads(threads()) }; },
    // why the status warns about the picked backend ('' when it does not)
    warning: (best) => (backends.nonFinite.includes(best)
      ? 'Warning: every TensorFlow.js backend here gives NaN/Inf outputs for a blank input.' : ''),
    // the pick memory's key parts: the model's SHA-256 (graph + weights; null without Web Crypto), wasm threads, GPU
    get cacheKey() { const r = backends.runtime(); return { hash: graph.hash, threads: r.wasmThreads, gpu: r.gpuAdapter }; },
    runtimeInfo: () => backends.runtime(),
    load,
    run,
    time,
    dispose() { if (graph.model) graph.model.dispose(); graph.model = null; },
  };
}
