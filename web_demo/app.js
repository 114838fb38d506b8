// edgetool demo page: loads the converted tfjs graph model, builds its input UI from demo-config.json,
// picks the fastest working backend and exposes window.edgetool for tests and embedders.
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const BACKENDS = ['wasm', 'webgl', 'cpu'];
  // Micro-benchmark per backend: one untimed warm-up run (compiles kernels/shaders, moves the weights, starts the
  // wasm threads), then timed runs until BENCH_MAX_RUNS or until BENCH_BUDGET_MS has passed (at least one).
  const BENCH_MAX_RUNS = 10;
  const BENCH_BUDGET_MS = 500;
  const MAX_THREADS = 8; // tfjs-backend-wasm pre-creates 8 pthread workers
  const QUANT_PROB_TOLERANCE = 0.05; // int8 softmax: each class is within half a step (1/512) of its float value
  const CORES = navigator.hardwareConcurrency || 1;
  const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software|basic render/i;
  const params = new URLSearchParams(window.location.search);

  let config = null;
  let inputs = []; // every model input (config.inputs); the first image-like one gets the drawing pad
  let outputs = []; // every output head (config.outputs); outputs[0] is the ranked one labels apply to
  let imageInput = null;
  let model = null;
  let useExecuteAsync = false;
  let resolveReady;
  let rejectReady;
  const ready = new Promise((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });
  ready.catch(() => {});
  const state = { backends: [], bench: {}, skipped: {}, busy: false, pending: false, source: 'draw', timings: {} };
  // Engines: 'tfjs' (always) and, on sites built with `edgetool demo --litert`, 'litert' (litert.js, LiteRT.js).
  const engines = { tfjs: null };
  state.engine = 'tfjs';

  window.edgetool = {
    ready,
    // predict(values, shape) for one-input models; predict({inputName: values | {values, shape}}) for any model.
    predict: async (values, shape) => {
      await ready;
      const feeds = toFeeds(values, shape);
      const result = await runAndShow(feeds);
      showApiInput(feeds);
      return result;
    },
    setBackend: async (name) => { await ready; return switchBackend(name); },
    setEngine: async (name) => { await ready; return switchEngine(name); },
    // Model execution only (input tensor already resident, output read back to synchronise): times in ms.
    timeInference: async (runs = 30, warmup = 1) => { await ready; return timeInference(runs, warmup); },
    get backend() { return typeof tf === 'undefined' ? null : tf.getBackend(); },
    get backends() { return state.backends.slice(); },
    get engine() { return state.engine; },
    get engines() { return Object.keys(engines); },
    get benchmark() { return { ...state.bench }; },
    get config() { return config; },
    get runtime() { return runtimeInfo(); },
    get timings() { return { ...state.timings }; },
  };

  function mark(name) { state.timings[name] = performance.now(); } // ms since navigation start

  // wasm threads (need cross-origin isolation; edgetool serve sends COOP/COEP): ?threads=N, else one per two logical
  // cores, tfjs's own default. Every wasm operator is split across the pool and joined again, and each join waits for
  // Web Workers to wake up: on a 2-core test machine 2 threads ran MobileNetV2 1.5-4x slower than 1
  // (benchmarks/bench_browser.py).
  function wasmThreads() {
    const asked = Number.parseInt(params.get('threads'), 10);
    if (Number.isInteger(asked) && asked >= 1) return Math.min(asked, CORES, MAX_THREADS);
    return Math.max(1, Math.min(Math.floor(CORES / 2), MAX_THREADS));
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

  function runtimeInfo() {
    const info = { crossOriginIsolated: window.crossOriginIsolated === true, backend: window.edgetool.backend,
      hardwareConcurrency: CORES, wasmThreads: null, webglRenderer: state.glRenderer || null };
    if (state.wasmStarted) { // (tf.findBackend would start the wasm backend)
      try { info.wasmThreads = tf.wasm.getThreadsCount(); } catch (err) { /* wasm failed to start */ }
    }
    return info;
  }

  // ---------- model execution ----------

  // Shape of one sample of an input: the size chosen for open image dimensions (feedShape), else batch 1.
  function defaultShape(inp = inputs[0]) {
    if (inp.feedShape) return inp.feedShape.slice();
    return inp.shape.map((d, i) => (i === 0 || d === null ? 1 : d));
  }

  const sizeOf = (shape) => shape.reduce((a, b) => a * b, 1);

  function zeroFeeds() {
    return Object.fromEntries(inputs.map((inp) => {
      const shape = defaultShape(inp);
      return [inp.name, { values: new Float32Array(sizeOf(shape)), shape }];
    }));
  }

  // predict()'s arguments -> {inputName: {values, shape}} covering every input exactly once.
  function toFeeds(values, shape) {
    if (Array.isArray(values) || ArrayBuffer.isView(values)) {
      if (inputs.length !== 1) {
        throw new Error(`predict: this model has ${inputs.length} inputs (${inputs.map((i) => i.name).join(', ')}); `
          + 'pass an object {inputName: values}');
      }
      return { [inputs[0].name]: { values, shape: shape ? Array.from(shape) : defaultShape() } };
    }
    if (!values || typeof values !== 'object') throw new Error('predict: expected values or {inputName: values}');
    const known = new Set(inputs.map((i) => i.name));
    const unknown = Object.keys(values).filter((k) => !known.has(k));
    if (unknown.length) throw new Error(`predict: unknown input(s) ${unknown.join(', ')}; the model takes ${[...known].join(', ')}`);
    return Object.fromEntries(inputs.map((inp) => {
      const v = values[inp.name];
      if (v === undefined) throw new Error(`predict: no values for input ${inp.name}`);
      const plain = Array.isArray(v) || ArrayBuffer.isView(v);
      return [inp.name, { values: plain ? v : v.values, shape: !plain && v.shape ? Array.from(v.shape) : defaultShape(inp) }];
    }));
  }

  // A [0,1] row summing to 1 (within tolerance) is shown ranked; anything else as raw values.
  function isProbabilityRow(row, tolerance = 1e-3) {
    const sum = row.reduce((a, b) => a + b, 0);
    return row.length > 1 && row.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < tolerance;
  }

  // tolerance: how far from 1 the sum of a probability row may be (int8 softmax outputs are multiples of 1/256).
  function toProbabilities(row, tolerance = 1e-3) {
    if (row.length === 1 || isProbabilityRow(row, tolerance)) return row;
    const max = Math.max(...row);
    const exps = row.map((v) => Math.exp(v - max));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((v) => v / total);
  }

  function topK(probs) {
    const labels = config.labels;
    return probs
      .map((p, i) => ({ label: labels[i] !== undefined ? labels[i] : String(i), probability: p, index: i }))
      .sort((a, b) => b.probability - a.probability)
      .slice(0, config.topK)
      .map(({ label, probability }) => ({ label, probability }));
  }

  // One flat typed array for tf.tensor: typed arrays of the right type are used as they are (no JS-array detour).
  function toTyped(values, dtype) {
    if (dtype === 'int32') {
      return values instanceof Int32Array ? values : Int32Array.from(values, (v) => Math.round(Number(v)));
    }
    return values instanceof Float32Array ? values : Float32Array.from(values, Number);
  }

  // Graph models without control flow run synchronously (execute); models with dynamic ops need executeAsync.
  // feeds: {graph tensor name: tf.Tensor}; returns one tensor per output head, in `outputs` order.
  async function execute(feeds) {
    const names = outputs.map((o) => o.tensor);
    if (!useExecuteAsync) {
      try {
        const y = model.execute(feeds, names);
        return Array.isArray(y) ? y : [y];
      } catch (err) {
        if (!/executeAsync/.test(String(err && err.message))) throw err;
        useExecuteAsync = true;
      }
    }
    const y = await model.executeAsync(feeds, names);
    return Array.isArray(y) ? y : [y];
  }

  function checkFeeds(feeds) {
    let batch = null;
    for (const inp of inputs) {
      const { values, shape } = feeds[inp.name];
      const size = sizeOf(shape);
      if (!values || values.length !== size) {
        throw new Error(`predict: ${inp.name} shape [${shape}] needs ${size} values, got ${values ? values.length : 0}`);
      }
      if (batch !== null && shape[0] !== batch) throw new Error(`predict: inputs disagree on the batch (${batch} vs ${shape[0]})`);
      batch = shape[0];
    }
    return batch;
  }

  function tensorFeeds(feeds) {
    return Object.fromEntries(inputs.map((inp) => {
      const { values, shape } = feeds[inp.name];
      return [inp.tensor, tf.tensor(toTyped(values, inp.tfjsDtype), shape, inp.tfjsDtype)];
    }));
  }

  // feeds: {inputName: {values, shape}}. Result: the ranked head (probabilities, top) plus every head's raw values.
  async function run(feeds) {
    const batch = checkFeeds(feeds);
    if (state.engine !== 'tfjs') {
      const only = feeds[inputs[0].name];
      return runEngine(engines[state.engine], only.values, only.shape);
    }
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
      Object.values(xs).forEach((x) => x.dispose());
      ys.forEach((y) => y.dispose());
    }
    const ms = performance.now() - start;
    const out = heads[outputs[0].name].values;
    const k = out.length / batch;
    const rows = [];
    for (let b = 0; b < batch; b++) rows.push(toProbabilities(out.slice(b * k, (b + 1) * k)));
    const backend = tf.getBackend();
    const common = { outputs: heads, ms, backend, engine: 'tfjs' };
    if (batch === 1) return { probabilities: rows[0], top: topK(rows[0]), ...common };
    return { probabilities: rows, top: rows.map(topK), ...common };
  }

  // A non-tfjs engine runs a fixed-batch-1 model: one sample at a time. Its output is returned as it is when it
  // already is a (quantized) probability row, so it can be compared with the same .tflite run natively.
  async function runEngine(engine, values, shape) {
    const batch = shape[0];
    const k = values.length / batch;
    const start = performance.now();
    const rows = [];
    for (let b = 0; b < batch; b++) {
      rows.push(toProbabilities(Array.from(await engine.run(values.slice(b * k, (b + 1) * k))), QUANT_PROB_TOLERANCE));
    }
    const ms = performance.now() - start;
    const backend = 'wasm';
    const heads = { [outputs[0].name]: { shape: [batch, rows[0].length], values: rows.flat() } };
    const common = { outputs: heads, ms, backend, engine: engine.name };
    if (batch === 1) return { probabilities: rows[0], top: topK(rows[0]), ...common };
    return { probabilities: rows, top: rows.map(topK), ...common };
  }

  async function timeInference(runs, warmup) {
    if (state.engine !== 'tfjs') return timeEngine(engines[state.engine], runs, warmup);
    const xs = tensorFeeds(zeroFeeds());
    const times = [];
    try {
      for (let i = 0; i < warmup + runs; i++) {
        const start = performance.now();
        const ys = await execute(xs);
        await Promise.all(ys.map((y) => y.data()));
        const ms = performance.now() - start;
        ys.forEach((y) => y.dispose());
        if (i >= warmup) times.push(ms);
      }
    } finally {
      Object.values(xs).forEach((x) => x.dispose());
    }
    return { backend: tf.getBackend(), times };
  }

  async function timeEngine(engine, runs, warmup) {
    const zeros = new Float32Array(sizeOf(defaultShape()));
    const times = [];
    for (let i = 0; i < warmup + runs; i++) {
      const start = performance.now();
      await engine.run(zeros);
      if (i >= warmup) times.push(performance.now() - start);
    }
    return { backend: 'wasm', engine: engine.name, times };
  }

  async function runAndShow(feeds) {
    const result = await run(feeds);
    showResult(result);
    return result;
  }

  // ---------- backends ----------

  // The first switch to wasm starts it with the wanted thread count.
  async function trySetBackend(name) {
    if (name === 'wasm' && !state.wasmStarted) {
      state.wasmStarted = true;
      return startWasm(wasmThreads());
    }
    return activate(name);
  }

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

  function median(xs) {
    const s = xs.slice().sort((a, b) => a - b);
    return s[Math.floor((s.length - 1) / 2)];
  }

  // Time-bounded micro-benchmark of the current backend: median ms of the timed runs after one warm-up run.
  // quick: the warm-up and one timed run only (nothing to compare against, so just leave the backend warm).
  async function timeBackend(quick = false) {
    const zeros = zeroFeeds();
    await run(zeros); // warm-up: compiles kernels / shaders, moves the weights here, starts the wasm threads
    const times = [];
    const deadline = performance.now() + BENCH_BUDGET_MS;
    do {
      times.push((await run(zeros)).ms);
    } while (!quick && times.length < BENCH_MAX_RUNS && performance.now() < deadline);
    return median(times);
  }

  // Why a working backend is not worth benchmarking while another one works (null: benchmark it).
  function skipReason(name) {
    if (name === 'cpu') return 'not benchmarked: plain-JS fallback, slower than wasm and webgl';
    if (name === 'webgl' && SOFTWARE_GL.test(state.glRenderer || '')) {
      return `not benchmarked: software-rendered WebGL (${state.glRenderer})`;
    }
    return null;
  }

  // Initialise the backends (?backend=NAME: only that one), benchmark those worth it, switch to the fastest and
  // leave it warm (weights on it, kernels compiled), so the first user inference is a steady-state one.
  async function pickBackend() {
    const wanted = params.get('backend');
    const usable = BACKENDS.includes(wanted) && tf.findBackendFactory(wanted) && (await trySetBackend(wanted));
    const forced = usable ? wanted : null;
    if (wanted && !forced) console.warn(`?backend=${wanted} is not available here; picking automatically`);
    for (const name of forced ? [forced] : BACKENDS) {
      if (!tf.findBackendFactory(name) || !(await trySetBackend(name))) continue;
      if (name === 'webgl') state.glRenderer = glRenderer();
      state.backends.push(name);
    }
    const worth = forced ? [forced] : state.backends.filter((name) => !skipReason(name));
    const ranked = [...worth, ...state.backends.filter((name) => !worth.includes(name))];
    for (const name of ranked) {
      if (!worth.includes(name) && Object.keys(state.bench).length) {
        state.skipped[name] = skipReason(name);
        continue;
      }
      try {
        await trySetBackend(name);
        state.bench[name] = await timeBackend(worth.length <= 1);
      } catch (err) {
        console.warn(`backend ${name} failed to run the model:`, err);
        state.backends.splice(state.backends.indexOf(name), 1);
      }
    }
    const measured = Object.keys(state.bench);
    if (!measured.length) throw new Error('no TensorFlow.js backend could run the model');
    const best = measured.reduce((a, b) => (state.bench[b] < state.bench[a] ? b : a));
    if (tf.getBackend() !== best) {
      await trySetBackend(best);
      await run(zeroFeeds()); // moves the weights back: warm again
    }
    return best;
  }

  async function switchBackend(name) {
    if (!state.backends.includes(name)) {
      throw new Error(`backend ${name} is not available here; choose one of ${state.backends.join(', ')}`);
    }
    if (!(await trySetBackend(name))) throw new Error(`could not switch to backend ${name}`);
    state.bench[name] = await timeBackend();
    delete state.skipped[name];
    fillBenchTable();
    $('backend').value = name;
    if (state.lastInput) await predictFromUi();
    return tf.getBackend();
  }

  // ---------- results ----------

  function showResult(result) {
    const top = Array.isArray(result.top[0]) ? result.top[0] : result.top;
    const list = $('top');
    showHeads(result.outputs || {});
    if (outputs[0].kind !== 'classes') { list.replaceChildren(); return showLatency(result); }
    list.replaceChildren(...top.map(({ label, probability }) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.className = 'label';
      name.textContent = label;
      const track = document.createElement('span');
      track.className = 'track';
      const fill = document.createElement('span');
      fill.className = 'fill';
      fill.style.display = 'block';
      fill.style.width = `${(probability * 100).toFixed(1)}%`;
      track.append(fill);
      const p = document.createElement('span');
      p.className = 'p';
      p.textContent = `${(probability * 100).toFixed(1)}%`;
      li.append(name, track, p);
      return li;
    }));
    return showLatency(result);
  }

  function showLatency(result) {
    $('latency').textContent = `${result.ms.toFixed(2)} ms`;
    if (result.engine === 'tfjs') $('backend').value = result.backend;
  }

  const MAX_SHOWN_VALUES = 16;

  // Every head except a ranked primary one: its first sample as top-k (probability-like) or raw values.
  function showHeads(heads) {
    const shown = outputs.filter((o, i) => heads[o.name] && (i > 0 || o.kind !== 'classes'));
    $('heads').hidden = shown.length === 0;
    $('heads').replaceChildren(...shown.map((o) => {
      const { shape, values } = heads[o.name];
      const row = values.slice(0, shape.length > 1 ? values.length / shape[0] : values.length);
      const box = document.createElement('div');
      box.className = 'head';
      const title = document.createElement('h3');
      title.textContent = `${o.name} [${shape.slice(1).join(',') || '1'}]`;
      const body = document.createElement('p');
      body.className = 'values';
      if (isProbabilityRow(row)) {
        body.textContent = row.map((p, i) => [i, p]).sort((a, b) => b[1] - a[1]).slice(0, config.topK)
          .map(([i, p]) => `${i}: ${(p * 100).toFixed(1)}%`).join(' \u00b7 ');
      } else {
        const more = row.length > MAX_SHOWN_VALUES ? ` \u2026 (${row.length} values)` : '';
        body.textContent = row.slice(0, MAX_SHOWN_VALUES).map((v) => Number(v).toPrecision(4)).join(', ') + more;
      }
      box.append(title, body);
      return box;
    }));
  }

  function setStatus(text, isError = false) {
    $('status').textContent = text;
    $('status').classList.toggle('error', isError);
  }

  // ---------- image input: drawing pad, upload, camera ----------

  function luminance(r, g, b) { return (0.299 * r + 0.587 * g + 0.114 * b) / 255; }

  // Area-average the square/rect crop (x0, y0, cw, ch) of the pad into the model's H x W x C grid in 0..1.
  function padToGrid(x0, y0, cw, ch) {
    const { height: H, width: W, channels: C } = imageInput;
    const pad = $('pad');
    const img = pad.getContext('2d').getImageData(0, 0, pad.width, pad.height).data;
    const sums = new Float32Array(H * W * C);
    for (let y = Math.max(0, Math.floor(y0)); y < Math.min(pad.height, y0 + ch); y++) {
      const gy = Math.floor(((y - y0) / ch) * H);
      if (gy < 0 || gy >= H) continue;
      for (let x = Math.max(0, Math.floor(x0)); x < Math.min(pad.width, x0 + cw); x++) {
        const gx = Math.floor(((x - x0) / cw) * W);
        if (gx < 0 || gx >= W) continue;
        const i = (y * pad.width + x) * 4;
        const base = (gy * W + gx) * C;
        if (C === 1) sums[base] += luminance(img[i], img[i + 1], img[i + 2]);
        else for (let c = 0; c < 3; c++) sums[base + c] += img[i + c] / 255;
      }
    }
    const area = (cw / W) * (ch / H);
    const invert = $('invert').checked;
    return Array.from(sums, (s) => {
      const v = Math.min(1, s / area);
      return invert ? 1 - v : v;
    });
  }

  // Bounding box of the strokes, grown to a centred square with a margin (as the digits data is size-normalised).
  function strokeBox() {
    const pad = $('pad');
    const img = pad.getContext('2d').getImageData(0, 0, pad.width, pad.height).data;
    let minX = pad.width; let minY = pad.height; let maxX = -1; let maxY = -1;
    for (let y = 0; y < pad.height; y++) {
      for (let x = 0; x < pad.width; x++) {
        if (img[(y * pad.width + x) * 4] > 25) {
          if (x < minX) minX = x; if (x > maxX) maxX = x;
          if (y < minY) minY = y; if (y > maxY) maxY = y;
        }
      }
    }
    if (maxX < 0) return null;
    const side = Math.max(maxX - minX + 1, maxY - minY + 1) * 1.15;
    return [(minX + maxX + 1) / 2 - side / 2, (minY + maxY + 1) / 2 - side / 2, side, side];
  }

  function gridToValues(grid) {
    const [lo, hi] = imageInput.range;
    return grid.map((v) => lo + v * (hi - lo));
  }

  function drawPreview(grid) {
    const { height: H, width: W, channels: C } = imageInput;
    const preview = $('preview');
    const ctx = preview.getContext('2d');
    const image = ctx.createImageData(W, H);
    for (let p = 0; p < H * W; p++) {
      for (let c = 0; c < 3; c++) image.data[p * 4 + c] = Math.round(255 * grid[p * C + (C === 1 ? 0 : c)]);
      image.data[p * 4 + 3] = 255;
    }
    ctx.putImageData(image, 0, 0);
  }

  async function predictFromUi() {
    if (state.busy) { state.pending = true; return; }
    state.busy = true;
    try {
      do {
        state.pending = false;
        const feeds = currentInput();
        if (feeds === null) { $('top').replaceChildren(); setStatus('Draw something to get a prediction.'); break; }
        state.lastInput = feeds;
        await runAndShow(feeds);
        setStatus('Ready.');
      } while (state.pending);
    } catch (err) {
      setStatus(`Prediction failed: ${err.message}`, true);
    } finally {
      state.busy = false;
    }
  }

  // Show a single image given through the API on the pad and the preview, so the page shows what was classified.
  function showApiInput(feeds) {
    const given = imageInput && feeds[imageInput.name];
    if (!given || given.shape[0] !== 1 || sizeOf(given.shape) !== imageInput.height * imageInput.width * imageInput.channels) return;
    const [lo, hi] = imageInput.range;
    const grid = Array.from(given.values, (v) => Math.min(1, Math.max(0, (v - lo) / (hi - lo))));
    drawPreview(grid);
    const pad = $('pad');
    const ctx = pad.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage($('preview'), 0, 0, pad.width, pad.height);
    state.source = 'image';
  }

  // Every input's current value from the page: the pad (image input) and the form (all others); null: nothing drawn.
  function currentInput() {
    const feeds = readFields();
    if (!imageInput) return feeds;
    const pad = $('pad');
    let box;
    if (state.source === 'draw') {
      box = strokeBox();
      if (!box) return null;
    } else {
      box = [0, 0, pad.width, pad.height];
    }
    const grid = padToGrid(...box);
    drawPreview(grid);
    feeds[imageInput.name] = { values: gridToValues(grid), shape: defaultShape(imageInput) };
    return feeds;
  }

  function clearPad() {
    const pad = $('pad');
    const ctx = pad.getContext('2d');
    ctx.fillStyle = config.draw.background;
    ctx.fillRect(0, 0, pad.width, pad.height);
  }

  // Draw an image/video frame onto the pad, centre-cropped to the model's aspect ratio.
  function drawSource(source, sw, sh) {
    const pad = $('pad');
    const ctx = pad.getContext('2d');
    const scale = Math.max(pad.width / sw, pad.height / sh);
    const w = sw * scale; const h = sh * scale;
    clearPad();
    ctx.drawImage(source, (pad.width - w) / 2, (pad.height - h) / 2, w, h);
    state.source = 'image';
    predictFromUi();
  }

  function setupImageInput() {
    const { height: H, width: W } = imageInput;
    $('image-input').hidden = false;
    const k = Math.max(1, Math.ceil(256 / Math.max(H, W)));
    const pad = $('pad');
    pad.width = W * k;
    pad.height = H * k;
    $('preview').width = W;
    $('preview').height = H;
    $('preview-label').textContent = `What the model sees (${W}\u00d7${H})`;
    clearPad();
    const ctx = pad.getContext('2d');
    let drawing = false;
    let queued = false;
    const point = (ev) => {
      const r = pad.getBoundingClientRect();
      return [((ev.clientX - r.left) / r.width) * pad.width, ((ev.clientY - r.top) / r.height) * pad.height];
    };
    const schedule = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; predictFromUi(); });
    };
    pad.addEventListener('pointerdown', (ev) => {
      if (state.source !== 'draw') { clearPad(); state.source = 'draw'; }
      drawing = true;
      pad.setPointerCapture(ev.pointerId);
      ctx.strokeStyle = config.draw.foreground;
      ctx.fillStyle = config.draw.foreground;
      ctx.lineWidth = pad.width * config.draw.strokeFraction;
      ctx.lineCap = 'round';
      ctx.lineJoin = 'round';
      const [x, y] = point(ev);
      ctx.beginPath();
      ctx.arc(x, y, ctx.lineWidth / 2, 0, 2 * Math.PI);
      ctx.fill();
      ctx.beginPath();
      ctx.moveTo(x, y);
      schedule();
    });
    pad.addEventListener('pointermove', (ev) => {
      if (!drawing) return;
      const [x, y] = point(ev);
      ctx.lineTo(x, y);
      ctx.stroke();
      schedule();
    });
    const stop = () => { if (drawing) { drawing = false; schedule(); } };
    pad.addEventListener('pointerup', stop);
    pad.addEventListener('pointercancel', stop);
    $('clear').addEventListener('click', () => {
      clearPad();
      state.source = 'draw';
      state.lastInput = null;
      drawPreview(new Array(H * W * imageInput.channels).fill(0));
      $('top').replaceChildren();
      setStatus('Draw something to get a prediction.');
    });
    $('invert').addEventListener('change', () => predictFromUi());
    $('file').addEventListener('change', async () => {
      const file = $('file').files[0];
      if (!file) return;
      try {
        const bitmap = await createImageBitmap(file);
        drawSource(bitmap, bitmap.width, bitmap.height);
      } catch (err) {
        setStatus(`Could not read ${file.name}: ${err.message}`, true);
      }
    });
    setupCamera();
  }

  function setupCamera() {
    if (!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia)) return; // stays hidden
    const video = $('video');
    $('camera').hidden = false;
    let stream = null;
    $('camera').addEventListener('click', async () => {
      if (stream) {
        stream.getTracks().forEach((t) => t.stop());
        stream = null;
        video.hidden = true; $('snap').hidden = true; $('camera').textContent = 'Use camera';
        return;
      }
      try {
        stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
      } catch (err) {
        setStatus(`Camera unavailable: ${err.message}`, true);
        return;
      }
      video.srcObject = stream;
      await video.play();
      video.hidden = false; $('snap').hidden = false; $('camera').textContent = 'Stop camera';
    });
    $('snap').addEventListener('click', () => drawSource(video, video.videoWidth, video.videoHeight));
  }

  // ---------- form for every non-image input (numbers, a table row, token ids) ----------

  const MAX_FIELDS = 32; // more values per input: one textarea

  function formInputs() { return inputs.filter((inp) => inp !== imageInput); }

  function setupForm() {
    const fields = $('fields');
    for (const inp of formInputs()) {
      const group = document.createElement('fieldset');
      group.dataset.input = inp.name;
      const legend = document.createElement('legend');
      legend.textContent = `${inp.name} ${inp.dtype}[${defaultShape(inp).slice(1).join(',')}]`;
      group.append(legend);
      if (inp.features <= MAX_FIELDS) {
        for (let i = 0; i < inp.features; i++) {
          const label = document.createElement('label');
          label.textContent = (inp.featureNames || [])[i] || `${inputs.length > 1 ? `${inp.name} ` : 'x'}${i}`;
          const field = document.createElement('input');
          field.type = 'number'; field.step = inp.integer ? '1' : 'any'; field.value = '0'; field.name = `f${i}`;
          label.append(field);
          group.append(label);
        }
      } else {
        const area = document.createElement('textarea');
        area.placeholder = `${inp.features} ${inp.integer ? 'integers' : 'numbers'} separated by commas or spaces`;
        area.setAttribute('aria-label', inp.name);
        group.append(area);
      }
      fields.append(group);
    }
    if (!formInputs().length) return;
    $('flat-input').hidden = false;
    $('flat-input').addEventListener('submit', (ev) => { ev.preventDefault(); predictFromUi(); });
  }

  // {inputName: {values, shape}} of every form input; an Error naming the input when a field is not a number.
  function readFields() {
    const feeds = {};
    for (const inp of formInputs()) {
      const group = $('fields').querySelector(`fieldset[data-input="${CSS.escape(inp.name)}"]`);
      const area = group.querySelector('textarea');
      const values = area
        ? area.value.split(/[\s,;]+/).filter(Boolean).map(Number)
        : Array.from(group.querySelectorAll('input'), (el) => Number(el.value));
      if (values.length !== inp.features || values.some((v) => !Number.isFinite(v))) {
        throw new Error(`${inp.name}: expected ${inp.features} numbers, got ${values.length}`);
      }
      if (inp.integer && values.some((v) => !Number.isInteger(v))) throw new Error(`${inp.name}: expected integers`);
      feeds[inp.name] = { values, shape: defaultShape(inp) };
    }
    return feeds;
  }

  // ---------- start-up ----------

  function fillBenchTable() {
    $('bench').replaceChildren(...state.backends.map((name) => {
      const tr = document.createElement('tr');
      const td1 = document.createElement('td');
      td1.textContent = name;
      const td2 = document.createElement('td');
      td2.textContent = name in state.bench
        ? `${state.bench[name].toFixed(2)} ms / inference (median, warm)` : state.skipped[name];
      tr.append(td1, td2);
      return tr;
    }));
  }

  function fillBackendSelect(active) {
    const select = $('backend');
    select.replaceChildren(...state.backends.map((name) => {
      const opt = document.createElement('option');
      opt.value = name;
      opt.textContent = name;
      return opt;
    }));
    select.value = active;
    select.disabled = state.backends.length < 2;
    select.addEventListener('change', async () => {
      try { await switchBackend(select.value); setStatus(`Switched to ${select.value}.`); } catch (err) { setStatus(err.message, true); }
    });
    fillBenchTable();
  }

  // wasm threads are fixed when the wasm backend starts: changing them reloads the page with ?threads=N.
  function fillThreadsSelect() {
    const select = $('threads');
    const current = runtimeInfo().wasmThreads;
    if (current === null) return;
    const most = Math.max(current, Math.min(CORES, MAX_THREADS));
    select.replaceChildren(...Array.from({ length: most }, (_, i) => {
      const opt = document.createElement('option');
      opt.value = String(i + 1);
      opt.textContent = String(i + 1);
      return opt;
    }));
    select.value = String(current);
    select.disabled = most < 2;
    select.title = window.crossOriginIsolated ? 'wasm threads' : 'single-threaded: the page is not cross-origin isolated';
    select.addEventListener('change', () => {
      params.set('threads', select.value);
      window.location.search = params.toString();
    });
  }

  // ---------- engines ----------

  // Load the LiteRT.js engine (sites built with --litert) and show the Engine select; tfjs keeps working without it.
  async function loadLiteRtEngine() {
    try {
      const mod = await import(new URL(config.litert.module, window.location.href).href);
      engines.litert = await mod.createEngine(config.litert);
      await engines.litert.run(new Float32Array(sizeOf(defaultShape()))); // warm-up
    } catch (err) {
      delete engines.litert;
      console.warn('LiteRT.js engine unavailable:', err);
      return;
    }
    const dt = document.createElement('dt');
    dt.textContent = 'Engine';
    const select = document.createElement('select');
    select.id = 'engine';
    select.setAttribute('aria-label', 'engine');
    select.replaceChildren(...[['tfjs', `TensorFlow.js ${tf.version.tfjs}`], ['litert', engines.litert.label]]
      .map(([value, text]) => Object.assign(document.createElement('option'), { value, textContent: text })));
    const dd = document.createElement('dd');
    dd.append(select);
    const backendRow = $('backend').closest('dd').previousElementSibling;
    backendRow.before(dt, dd);
    select.addEventListener('change', async () => {
      try { await switchEngine(select.value); setStatus(`Switched to ${select.selectedOptions[0].textContent}.`); } catch (err) { setStatus(err.message, true); }
    });
  }

  async function switchEngine(name) {
    if (!(name in engines)) throw new Error(`engine ${name} is not available here; choose one of ${Object.keys(engines).join(', ')}`);
    state.engine = name;
    $('engine').value = name;
    $('backend').disabled = name !== 'tfjs' || state.backends.length < 2;
    $('threads').disabled = name !== 'tfjs' || $('threads').options.length < 2;
    if (state.lastInput) await predictFromUi();
    return name;
  }

  function registerServiceWorker() {
    if (!('serviceWorker' in navigator)) return;
    navigator.serviceWorker.register('sw.js').catch((err) => console.warn('service worker registration failed:', err));
    navigator.serviceWorker.ready.then(() => {
      $('offline').textContent = 'available offline';
      $('offline').classList.add('ok');
    });
  }

  async function main() {
    tf.enableProdMode();
    config = await (await fetch('demo-config.json')).json();
    mark('config');
    inputs = config.inputs || [config.input];
    outputs = config.outputs || [config.output];
    imageInput = inputs.find((i) => i.kind === 'image') || null;
    const dims = (shape) => shape.map((d) => (d === null ? '?' : d)).join(',');
    $('model-info').textContent = `${inputs.map((i) => `${i.name} ${i.dtype}[${dims(i.shape)}]`).join(', ')} \u2192 `
      + `${outputs.map((o) => `${o.name}[${dims(o.shape)}]`).join(', ')} \u00b7 TensorFlow.js ${tf.version.tfjs}`;
    tf.wasm.setWasmPaths(new URL(config.wasmPath, window.location.href).href);
    // fetch the weights while the first backend initialises (wasm: compile the binary, start its threads)
    const first = BACKENDS.includes(params.get('backend')) ? params.get('backend') : BACKENDS[0];
    const [artifacts] = await Promise.all([tf.io.http(config.modelUrl).load(), trySetBackend(first)]);
    mark('backendInit');
    model = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
    mark('model');
    const best = await pickBackend();
    mark('warm');
    if (config.litert) {
      await loadLiteRtEngine();
      mark('litert');
    }
    fillBackendSelect(best);
    fillThreadsSelect();
    if (engines[params.get('engine')]) await switchEngine(params.get('engine')); // ?engine=litert
    setupForm();
    if (imageInput) setupImageInput();
    setStatus(imageInput ? `Ready (${best}). Draw something.` : `Ready (${best}).`);
    mark('ready');
    resolveReady({ backend: best, backends: state.backends.slice(), benchmark: { ...state.bench }, runtime: runtimeInfo(),
      engine: state.engine, engines: Object.keys(engines) });
  }

  // The service worker precaches the whole site (runtime + weights): let it do so after start-up, not during it.
  ready.then(registerServiceWorker, registerServiceWorker);
  main().catch((err) => {
    console.error(err);
    setStatus(`Could not start: ${err.message}`, true);
    rejectReady(err);
  });
})();
