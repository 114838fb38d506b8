// edgetool demo page: loads the converted tfjs graph model, builds its input UI from demo-config.json,
// picks the fastest working backend and exposes window.edgetool for tests and embedders.
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const BACKENDS = ['wasm', 'webgl', 'cpu'];
  const BENCH_WARMUP = 3;
  const BENCH_RUNS = 10;

  let config = null;
  let model = null;
  let resolveReady;
  let rejectReady;
  const ready = new Promise((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });
  ready.catch(() => {});
  const state = { backends: [], bench: {}, busy: false, pending: false, source: 'draw' };

  window.edgetool = {
    ready,
    predict: async (values, shape) => {
      await ready;
      const result = await runAndShow(values, shape);
      showApiInput(values, shape);
      return result;
    },
    setBackend: async (name) => { await ready; return switchBackend(name); },
    get backend() { return typeof tf === 'undefined' ? null : tf.getBackend(); },
    get backends() { return state.backends.slice(); },
    get benchmark() { return { ...state.bench }; },
    get config() { return config; },
  };

  // ---------- model execution ----------

  function defaultShape() {
    return config.input.shape.map((d, i) => (i === 0 || d === null ? 1 : d));
  }

  function toProbabilities(row) {
    const sum = row.reduce((a, b) => a + b, 0);
    const isProb = row.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < 1e-3;
    if (isProb) return row;
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

  async function run(values, shape) {
    shape = shape ? Array.from(shape) : defaultShape();
    const size = shape.reduce((a, b) => a * b, 1);
    if (!values || values.length !== size) {
      throw new Error(`predict: shape [${shape}] needs ${size} values, got ${values ? values.length : 0}`);
    }
    const dtype = config.input.tfjsDtype;
    let data = Array.from(values, Number);
    if (dtype === 'int32') data = data.map(Math.round);
    const t0 = performance.now();
    const x = tf.tensor(data, shape, dtype);
    let y = null;
    let out;
    try {
      y = model.execute({ [config.input.tensor]: x }, config.output.tensor);
      out = await y.data();
    } finally {
      x.dispose();
      if (y) y.dispose();
    }
    const ms = performance.now() - t0;
    const batch = shape[0];
    const k = out.length / batch;
    const rows = [];
    for (let b = 0; b < batch; b++) rows.push(toProbabilities(Array.from(out.subarray(b * k, (b + 1) * k))));
    const backend = tf.getBackend();
    if (batch === 1) return { probabilities: rows[0], top: topK(rows[0]), ms, backend };
    return { probabilities: rows, top: rows.map(topK), ms, backend };
  }

  async function runAndShow(values, shape) {
    const result = await run(values, shape);
    showResult(result);
    return result;
  }

  // ---------- backends ----------

  async function trySetBackend(name) {
    try {
      if (!(await tf.setBackend(name))) return false;
      await tf.ready();
      return tf.getBackend() === name;
    } catch (err) {
      console.warn(`backend ${name} unavailable:`, err);
      return false;
    }
  }

  async function timeBackend() {
    const zeros = new Array(defaultShape().reduce((a, b) => a * b, 1)).fill(0);
    // warm-up: compiles kernels / shaders, moves the weights to this backend, starts wasm threads
    for (let i = 0; i < BENCH_WARMUP; i++) await run(zeros);
    const times = [];
    for (let i = 0; i < BENCH_RUNS; i++) times.push((await run(zeros)).ms);
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  }

  async function pickBackend() {
    for (const name of BACKENDS) {
      if (!tf.findBackendFactory(name)) continue;
      if (!(await trySetBackend(name))) continue;
      try {
        state.bench[name] = await timeBackend();
        state.backends.push(name);
      } catch (err) {
        console.warn(`backend ${name} failed to run the model:`, err);
      }
    }
    if (!state.backends.length) throw new Error('no TensorFlow.js backend could run the model');
    const best = state.backends.reduce((a, b) => (state.bench[b] < state.bench[a] ? b : a));
    await trySetBackend(best);
    return best;
  }

  async function switchBackend(name) {
    if (!state.backends.includes(name)) {
      throw new Error(`backend ${name} is not available here; choose one of ${state.backends.join(', ')}`);
    }
    if (!(await trySetBackend(name))) throw new Error(`could not switch to backend ${name}`);
    await timeBackend();
    $('backend').value = name;
    if (state.lastInput) await predictFromUi();
    return tf.getBackend();
  }

  // ---------- results ----------

  function showResult(result) {
    const top = Array.isArray(result.top[0]) ? result.top[0] : result.top;
    const list = $('top');
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
    $('latency').textContent = `${result.ms.toFixed(2)} ms`;
    $('backend').value = result.backend;
  }

  function setStatus(text, isError = false) {
    $('status').textContent = text;
    $('status').classList.toggle('error', isError);
  }

  // ---------- image input: drawing pad, upload, camera ----------

  function luminance(r, g, b) { return (0.299 * r + 0.587 * g + 0.114 * b) / 255; }

  // Area-average the square/rect crop (x0, y0, cw, ch) of the pad into the model's H x W x C grid in 0..1.
  function padToGrid(x0, y0, cw, ch) {
    const { height: H, width: W, channels: C } = config.input;
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
    const [lo, hi] = config.input.range;
    return grid.map((v) => lo + v * (hi - lo));
  }

  function drawPreview(grid) {
    const { height: H, width: W, channels: C } = config.input;
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
        const values = currentInput();
        if (values === null) { $('top').replaceChildren(); setStatus('Draw something to get a prediction.'); break; }
        state.lastInput = values;
        await runAndShow(values);
        setStatus('Ready.');
      } while (state.pending);
    } catch (err) {
      setStatus(`Prediction failed: ${err.message}`, true);
    } finally {
      state.busy = false;
    }
  }

  // Show a single image given through the API on the pad and the preview, so the page shows what was classified.
  function showApiInput(values, shape) {
    if (config.input.kind !== 'image' || (shape && shape[0] !== 1)) return;
    const [lo, hi] = config.input.range;
    const grid = Array.from(values, (v) => Math.min(1, Math.max(0, (v - lo) / (hi - lo))));
    drawPreview(grid);
    const pad = $('pad');
    const ctx = pad.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage($('preview'), 0, 0, pad.width, pad.height);
    state.source = 'image';
  }

  function currentInput() {
    if (config.input.kind === 'flat') return readFields();
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
    return gridToValues(grid);
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
    const { height: H, width: W } = config.input;
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
      drawPreview(new Array(H * W * config.input.channels).fill(0));
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

  // ---------- flat numeric input ----------

  function setupFlatInput() {
    const n = config.input.features;
    const fields = $('fields');
    if (n <= 32) {
      for (let i = 0; i < n; i++) {
        const label = document.createElement('label');
        label.textContent = config.input.featureNames[i] || `x${i}`;
        const input = document.createElement('input');
        input.type = 'number'; input.step = 'any'; input.value = '0'; input.name = `f${i}`;
        label.append(input);
        fields.append(label);
      }
    } else {
      const area = document.createElement('textarea');
      area.id = 'values';
      area.placeholder = `${n} numbers separated by commas or spaces`;
      fields.append(area);
    }
    $('flat-input').hidden = false;
    $('flat-input').addEventListener('submit', (ev) => { ev.preventDefault(); predictFromUi(); });
  }

  function readFields() {
    const n = config.input.features;
    const area = $('values');
    const values = area
      ? area.value.split(/[\s,;]+/).filter(Boolean).map(Number)
      : Array.from($('fields').querySelectorAll('input'), (el) => Number(el.value));
    if (values.length !== n || values.some((v) => !Number.isFinite(v))) {
      throw new Error(`expected ${n} numbers, got ${values.length}`);
    }
    return values;
  }

  // ---------- start-up ----------

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
    $('bench').replaceChildren(...state.backends.map((name) => {
      const tr = document.createElement('tr');
      tr.innerHTML = `<td>${name}</td><td>${state.bench[name].toFixed(2)} ms / inference (median of ${BENCH_RUNS})</td>`;
      return tr;
    }));
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
    config = await (await fetch('demo-config.json')).json();
    const inp = config.input;
    $('model-info').textContent = `${inp.name} ${inp.dtype}[${inp.shape.map((d) => (d === null ? '?' : d)).join(',')}] \u2192 `
      + `${config.output.classes || '?'} classes \u00b7 TensorFlow.js ${tf.version.tfjs}`;
    tf.wasm.setWasmPaths(new URL(config.wasmPath, window.location.href).href);
    model = await tf.loadGraphModel(config.modelUrl);
    const best = await pickBackend();
    fillBackendSelect(best);
    if (inp.kind === 'image') setupImageInput(); else setupFlatInput();
    setStatus(inp.kind === 'image' ? `Ready (${best}). Draw something.` : `Ready (${best}).`);
    resolveReady({ backend: best, backends: state.backends.slice(), benchmark: { ...state.bench } });
  }

  registerServiceWorker();
  main().catch((err) => {
    console.error(err);
    setStatus(`Could not start: ${err.message}`, true);
    rejectReady(err);
  });
})();
