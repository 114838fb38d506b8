// The LM page's Web Worker (a classic worker: @litertjs/core loads its wasm build with importScripts, which module
// workers lack; its ES modules come in with import()). It loads LiteRT.js and the .tflite once, then runs each
// generation (lm/generate.js) off the page's thread, posting every token as soon as it is sampled.
'use strict';

const state = { model: null, Tensor: null, lm: null, generate: null, stop: false };

// A macrotask turn through a MessageChannel (no 4 ms timer clamp): lets the page's stop message in between tokens.
const channel = new MessageChannel();
const pause = () => new Promise((resolve) => {
  channel.port1.onmessage = () => resolve();
  channel.port2.postMessage(null);
});

// msg: {urls: {core, build, log, generate, model}, wasmBuilds: {name: url}, lm, threads, build, accelerator}
async function load(msg) {
  const core = await import(msg.urls.core);
  const { chooseBuild, wasmFeatures } = await import(msg.urls.build);
  const { logHandlers } = await import(msg.urls.log);
  state.generate = (await import(msg.urls.generate)).generate;
  const choice = chooseBuild(msg.wasmBuilds, wasmFeatures(), msg.threads, msg.build || null);
  const start = performance.now();
  const script = msg.wasmBuilds[choice.build];
  // @litertjs/core hands self.Module to the wasm module factory. In a worker Emscripten would look for the .wasm
  // (and the threaded build's pthread script) beside this worker's script: point it at the build's own folder.
  self.Module = { ...logHandlers(), locateFile: (file) => new URL(file, script).href, mainScriptUrlOrBlob: script };
  await core.loadLiteRt(script);
  state.model = await core.loadAndCompile(msg.urls.model,
    { accelerator: msg.accelerator, cpuOptions: { numThreads: choice.threads } });
  state.Tensor = core.Tensor;
  state.lm = msg.lm;
  return { ...choice, accelerator: msg.accelerator, loadMs: performance.now() - start };
}

async function run(msg) {
  state.stop = false;
  const hooks = {
    onToken: (id) => self.postMessage({ type: 'token', id }),
    stopped: () => state.stop,
    pause,
  };
  return state.generate(state.model, state.Tensor, state.lm, msg.ids, msg.options, hooks);
}

self.onmessage = (event) => {
  const msg = event.data;
  if (msg.type === 'stop') {
    state.stop = true;
    return;
  }
  const work = msg.type === 'load' ? load(msg) : run(msg);
  work.then(
    (result) => self.postMessage({ type: msg.type === 'load' ? 'ready' : 'done', result }),
    (err) => self.postMessage({ type: 'error', message: String((err && err.message) || err) }),
  );
};
