// The LM page of an edgetool demo site (`edgetool demo MODEL.tflite --task lm`): a prompt box whose continuation
// streams in as LiteRT.js generates it in a Web Worker (lm/worker.js). window.edgetool is its scripting API:
// {ready, generate({prompt, maxNew, temperature, topK, seed}) -> result, stop(), config}.
import { $, option, setStatus, startServiceWorker } from '../ui/dom.js';
import { pageTokenizer } from './tokenizer.js';

const ready = {};
ready.promise = new Promise((resolve, reject) => Object.assign(ready, { resolve, reject }));
const page = { config: null, worker: null, engine: null, running: null, tokenizer: null };

// ?threads=N (wasm threads; default 1), ?litert-build=compat|default|threaded, ?accelerator=webgpu
function pageOptions() {
  const q = new URLSearchParams(window.location.search);
  return { threads: Math.max(1, Number(q.get('threads')) || 1), build: q.get('litert-build'),
    accelerator: q.get('accelerator') === 'webgpu' ? 'webgpu' : 'wasm' };
}

const url = (path) => new URL(path, window.location.href).href;

function startWorker(config, options) {
  const worker = new Worker(url('lm/worker.js'));
  const wasmBuilds = Object.fromEntries(Object.entries(config.wasmBuilds).map(([k, v]) => [k, url(v)]));
  const urls = { core: url('vendor/litert/core.js'), build: url('engines/litert-build.js'),
    log: url('engines/litert-log.js'), generate: url('lm/generate.js'), model: url(config.lm.modelUrl) };
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data.type === 'ready' ? resolve({ worker, engine: data.result })
      : reject(new Error(data.message)));
    worker.onerror = (e) => reject(new Error(e.message || 'the worker failed to start'));
    worker.postMessage({ type: 'load', urls, wasmBuilds, lm: config.lm, ...options });
  });
}

function showStats(result) {
  const tps = result.decodeSteps ? (1000 * result.decodeSteps) / result.decodeMs : 0;
  $('ttft').textContent = `${result.ttftMs.toFixed(0)} ms`;
  $('tps').textContent = result.decodeSteps ? `${tps.toFixed(1)} tokens/s` : '–';
  return tps;
}

// Generate from `request`; each token's text is appended to the output as it arrives.
function generate(request) {
  if (page.running) return Promise.reject(new Error('a generation is running; stop it first'));
  const { lm } = page.config;
  const ids = page.tokenizer.encode(request.prompt);
  if (!ids.length) return Promise.reject(new Error('type a prompt first (at least one character)'));
  const options = { maxNew: request.maxNew ?? 64, temperature: request.temperature ?? lm.sampler.temperature,
    topK: request.topK ?? lm.sampler.top_k, seed: request.seed ?? lm.sampler.seed, kind: request.kind ?? lm.sampler.kind };
  const decoder = page.tokenizer.decoder();
  const out = $('generated');
  $('prompt-echo').textContent = request.prompt;
  out.textContent = '';
  page.running = new Promise((resolve, reject) => {
    page.worker.onmessage = ({ data }) => {
      if (data.type === 'token') {
        out.textContent += decoder.push(data.id);
        return;
      }
      out.textContent += decoder.flush();
      page.running = null;
      if (data.type === 'error') { reject(new Error(data.message)); return; }
      const tokensPerS = showStats(data.result);
      resolve({ ...data.result, promptIds: ids, text: out.textContent, tokensPerS, engine: page.engine });
    };
  });
  page.worker.postMessage({ type: 'generate', ids, options });
  return page.running;
}

function stop() {
  if (page.worker) page.worker.postMessage({ type: 'stop' });
}

function readForm() {
  const num = (id) => Number($(id).value);
  return { prompt: $('prompt').value, maxNew: num('max-new'), temperature: num('temperature'), topK: num('top-k'),
    seed: num('seed') };
}

async function onGenerate(event) {
  event.preventDefault();
  $('generate').disabled = true;
  $('stop').disabled = false;
  setStatus('Generating…');
  try {
    const result = await generate(readForm());
    setStatus(`Done (${result.tokens.length} tokens, ${result.reason}).`);
  } catch (err) {
    setStatus(`Could not generate: ${err.message}`, true);
  } finally {
    $('generate').disabled = false;
    $('stop').disabled = true;
  }
}

function fillForm(lm) {
  $('temperature').value = lm.sampler.temperature;
  $('top-k').value = lm.sampler.top_k;
  $('seed').value = lm.sampler.seed;
  $('max-new').max = lm.maxLen;
  $('model-info').textContent = `${lm.numLayers} layers, context ${lm.maxLen} tokens, vocabulary ${lm.vocabSize}`;
}

// The accelerator menu: CPU (wasm) always, WebGPU where the browser gives an adapter; a choice reloads the page with
// ?accelerator= (the worker loads one LiteRT.js runtime for its life).
async function fillAccelerators(current) {
  const menu = $('accelerator');
  const adapter = navigator.gpu ? await navigator.gpu.requestAdapter().catch(() => null) : null;
  if (adapter || current === 'webgpu') menu.append(option('webgpu', 'GPU (WebGPU)'));
  menu.value = current;
  menu.disabled = menu.options.length < 2;
  menu.addEventListener('change', () => {
    const q = new URLSearchParams(window.location.search);
    q.set('accelerator', menu.value);
    window.location.search = q.toString();
  });
}

async function main() {
  await startServiceWorker(); // the wasm build the worker fetches goes through it and is kept for offline use
  const config = await (await fetch('demo-config.json')).json();
  page.config = config;
  const doc = config.lm.tokenizerUrl ? await (await fetch(config.lm.tokenizerUrl)).json() : null;
  page.tokenizer = pageTokenizer(config.lm, doc);
  fillForm(config.lm);
  const options = pageOptions();
  await fillAccelerators(options.accelerator);
  const started = await startWorker(config, options);
  Object.assign(page, started);
  const e = page.engine;
  $('engine').textContent = `LiteRT.js ${config.runtime['@litertjs/core'] || ''} (${e.accelerator === 'webgpu'
    ? 'WebGPU' : `${e.build} wasm build, ${e.threads} thread${e.threads > 1 ? 's' : ''}`}) in a Web Worker`;
  $('form').addEventListener('submit', onGenerate);
  $('stop').addEventListener('click', stop);
  $('generate').disabled = false;
  setStatus(`Ready (loaded in ${e.loadMs.toFixed(0)} ms).`);
  ready.resolve({ engine: page.engine });
}

window.edgetool = { ready: ready.promise, generate, stop, get config() { return page.config; } };
main().catch((err) => {
  console.error(err);
  setStatus(`Could not start: ${err.message}`, true);
  ready.reject(err);
});
