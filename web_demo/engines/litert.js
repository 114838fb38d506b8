// The LiteRT.js engine of an edgetool demo site (`edgetool demo --litert`): runs the fixed-batch-1 .tflite itself with
// @litertjs/core (vendored, import-mapped in index.html) on the fastest wasm build this browser supports among the
// vendored ones (engines/litert-build.js: relaxed SIMD, threads when cross-origin isolated, else the SIMD128
// "compat" build). main.js imports this module only when the site has it.
import { loadLiteRt, loadAndCompile, Tensor } from '@litertjs/core';
import { timeLoop } from './engine.js';
import { chooseBuild, wasmFeatures } from './litert-build.js';
import { logHandlers } from './litert-log.js';

const TYPED = { float32: Float32Array, int8: Int8Array, uint8: Uint8Array, int32: Int32Array };
const RANGE = { int8: [-128, 127], uint8: [0, 255] };
// int8 softmax: each class is within half a step (1/512) of its float value, so a row sums to 1 within this
const QUANT_PROB_TOLERANCE = 0.05;

// Values in the model's input domain -> the typed array the .tflite input wants (quantized if it is integer).
function toInput(values, io) {
  if (io.dtype === 'float32') return values instanceof Float32Array ? values : Float32Array.from(values, Number);
  if (io.dtype === 'int32') return Int32Array.from(values, (v) => Math.round(Number(v))); // token ids, masks
  const [lo, hi] = RANGE[io.dtype];
  const out = new TYPED[io.dtype](values.length);
  for (let i = 0; i < values.length; i++) {
    out[i] = Math.min(hi, Math.max(lo, Math.round(Number(values[i]) / io.scale) + io.zeroPoint));
  }
  return out;
}

// The output tensor as float32 (dequantized if it is integer).
function fromOutput(array, io) {
  if (io.dtype === 'float32') return Float32Array.from(array);
  return Float32Array.from(array, (q) => (q - io.zeroPoint) * io.scale);
}

// The wasm threads wanted: ?threads=N, else one per two logical cores (tfjs's default too).
const wantedThreads = (options) => options.threads || Math.max(1, Math.floor((navigator.hardwareConcurrency || 1) / 2));

// spec: demo-config.json's "litert" entry (one .tflite at the top, more under "variants"); config:
// config.describe(...) (each .tflite input is fed by the page input its `feed` names; its ranked head is the
// .tflite's only output); options:
// config.pageOptions(...) (?threads, ?litert-build). One engine per .tflite (see engines/engine.js), sharing one
// LiteRT.js runtime: 'litert' for the first, the variant's name (e.g. 'litert-fp32') for the others.
export function createEngines(spec, config, options = {}) {
  const features = wasmFeatures();
  const cores = navigator.hardwareConcurrency || 1;
  // No ?threads: offer 1 thread and one per core on the threaded build, and let the page's micro-benchmark pick —
  // more threads win on a quiet machine and lose on a busy one (workers wait for cores; benchmarks/RESULTS.md).
  const both = !options.threads && !options.litertBuild && cores > 1;
  const choice = chooseBuild(spec.wasmBuilds, features, both ? cores : wantedThreads(options),
    options.litertBuild || null);
  const base = window.location.href;
  const shared = { loading: null };
  // a .js file path: loads exactly this build (a directory would make LiteRT.js probe and pick on its own)
  const loadRuntime = () => {
    if (!shared.loading) {
      // @litertjs/core hands `self.Module` to the wasm module factory: its log lines leave through logHandlers
      self.Module = { ...logHandlers() };
      shared.loading = loadLiteRt(new URL(spec.wasmBuilds[choice.build], base).href);
    }
    return shared.loading;
  };
  const runtime = { build: choice.build, threads: choice.threads, reason: choice.reason,
    relaxedSimd: features.relaxedSimd, threadsSupported: features.threads };
  const counts = both && choice.build === 'threaded' ? [1, choice.threads] : [choice.threads];
  const models = [spec, ...(spec.variants || [])];
  const onCpu = models.flatMap((model) => counts.map((threads, i) => createEngine(
    i === 0 ? model : { ...model, name: `${model.name || 'litert'}-x${threads}`, label: `${model.label}, ${threads} threads` },
    config, { runtime: { ...runtime, threads }, loadRuntime, base })));
  // WebGPU: the float model (LiteRT.js's GPU path computes in float; an int8 model would be dequantized anyway)
  const float = models.find((m) => m.input.dtype === 'float32' && !/int8/.test(m.label)) || models[0];
  const gpu = createEngine({ ...float, name: 'litert-webgpu', label: `${float.label} on WebGPU` }, config,
    { runtime: { ...runtime, threads: 1, accelerator: 'webgpu' }, loadRuntime, base });
  return [...onCpu, gpu];
}

// The .tflite's inputs ({key: its name in LiteRT.js, feed: the page input feeding it, dtype, shape, ...}); sites
// built before several inputs were supported have only `input` (fed by the page's first input).
const inputsOf = (model, config) => model.inputs || [{ ...model.input, key: null, feed: config.inputs[0].name }];

function createEngine(model, config, { runtime, loadRuntime, base }) {
  const name = model.name || 'litert';
  const outputName = config.outputs[0].name;
  const ins = inputsOf(model, config);
  const compiled = { model: null };
  const accelerator = runtime.accelerator || 'wasm';

  // One sample (batch 1) per input ({page input name: values}) -> its output row as float32.
  async function runOne(sample) {
    const tensors = ins.map((io) => new Tensor(toInput(sample[io.feed], io), io.shape));
    let outputs = [];
    try {
      const given = ins.length === 1 ? tensors[0]
        : Object.fromEntries(ins.map((io, i) => [io.key, tensors[i]]));
      const out = await compiled.model.run(given);
      outputs = Array.isArray(out) ? out : Object.values(out);
      return fromOutput(await outputs[0].data(), model.output); // (data(): copied back from the GPU if there)
    } finally {
      for (const t of [...tensors, ...outputs]) t.delete();
    }
  }

  async function load() {
    if (accelerator === 'webgpu') {
      const adapter = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
      if (!adapter) throw new Error(navigator.gpu ? 'WebGPU gives no adapter here' : 'no WebGPU in this browser');
    }
    await loadRuntime();
    compiled.model = await loadAndCompile(new URL(model.modelUrl, base).href,
      { accelerator, cpuOptions: { numThreads: runtime.threads } });
  }

  // The model's batch is fixed to 1: a batch of feeds runs one sample at a time (typed arrays: views, no copies).
  async function run(feeds) {
    const batch = feeds[ins[0].feed].shape[0];
    const slice = (values, b) => {
      const k = values.length / batch;
      return values.subarray ? values.subarray(b * k, (b + 1) * k) : values.slice(b * k, (b + 1) * k);
    };
    const start = performance.now();
    const outs = [];
    for (let b = 0; b < batch; b++) {
      const sample = Object.fromEntries(ins.map((io) => [io.feed, slice(feeds[io.feed].values, b)]));
      for (const v of await runOne(sample)) outs.push(v);
    }
    const ms = performance.now() - start;
    const head = { shape: [batch, ...model.output.shape.slice(1)], values: outs }; // (e.g. [1, H, W, C] masks)
    return { outputs: { [outputName]: head }, ms, backend: accelerator, engine: name };
  }

  async function time(runs, warmup) {
    const zeros = Object.fromEntries(ins.map((io) => [io.feed, new Float32Array(io.shape.reduce((a, b) => a * b, 1))]));
    return { backend: accelerator, engine: name, times: await timeLoop(() => runOne(zeros).then(() => null), runs, warmup) };
  }

  const version = (config.litert && config.litert.runtime && config.litert.runtime['@litertjs/core']) || '';
  const threads = runtime.threads > 1 && !/threads/.test(model.label) ? `, ${runtime.threads} threads` : '';
  return {
    name,
    label: model.label,
    // what the page's header and footer name: 'LiteRT.js int8 (@litertjs/core 2.5.3, default wasm build)'
    title: `${model.label} (@litertjs/core ${version}, ${accelerator === 'webgpu' ? 'WebGPU, ' : ''}${runtime.build} wasm build${threads})`,
    runtime,
    backend: accelerator,
    shortName: model.label,
    probTolerance: QUANT_PROB_TOLERANCE,
    load,
    run,
    time,
    dispose() { if (compiled.model) compiled.model.delete(); compiled.model = null; },
  };
}
