// The prediction card: ranked top-k bars, the other output heads, the latency, the backend micro-benchmark table.
import { firstSample, headSummary, headTitle, percent } from '../postprocess.js';
import { $, textElement } from './dom.js';
import { showMask } from './mask.js';

function topItem({ label, probability }) {
  const li = document.createElement('li');
  const track = document.createElement('span');
  track.className = 'track';
  const fill = document.createElement('span');
  fill.className = 'fill';
  fill.style.display = 'block';
  fill.style.width = percent(probability);
  track.append(fill);
  li.append(textElement('span', 'label', label), track, textElement('span', 'p', percent(probability)));
  return li;
}

// Every head except the one the task shows (kind 'classes' ranked, or the task's own view): its first sample as
// top-k (probability-like) or raw values.
function showHeads(heads, config, shownFirst) {
  const shown = config.outputs.filter((o, i) => heads[o.name] && !(i === 0 && shownFirst));
  $('heads').hidden = shown.length === 0;
  $('heads').replaceChildren(...shown.map((o) => {
    const box = document.createElement('div');
    box.className = 'head';
    box.append(textElement('h3', '', headTitle(o.name, heads[o.name].shape)),
      textElement('p', 'values', headSummary(firstSample(heads[o.name]), config.topK)));
    return box;
  }));
}

// chooser: the name of the engine the Backend select belongs to (null: none)
function showLatency(result, chooser) {
  $('latency').textContent = `${result.ms.toFixed(2)} ms`;
  if (chooser && result.engine === chooser) $('backend').value = result.backend;
}

// The primary head's first sample as named numbers: labels name them, else "name[i]".
function namedValues(head, config) {
  const name = config.outputs[0].name;
  return firstSample(head).flatMap((v, i) => [textElement('dt', '', config.labels[i] !== undefined ? config.labels[i]
    : `${name}[${i}]`), textElement('dd', '', Number(v).toPrecision(6))]);
}

// How each task shows the primary head (view(result, config, page) -> whether it showed it); tasks without an entry
// show the ranked top-k (classification, multilabel: independent probabilities) when the head is a class row.
const VIEWS = {
  segmentation: (result, config, page) => {
    const head = result.outputs[config.outputs[0].name];
    if (!head || head.shape.length < 3) return false;
    result.mask = showMask(head, config.labels, page.inputCanvas());
    return true;
  },
  regression: (result, config) => {
    $('values').replaceChildren(...namedValues(result.outputs[config.outputs[0].name], config));
    $('values').hidden = false;
    return true;
  },
  embedding: (result, config) => showPairs(summarize(result, config, embeddingPairs)),
  image: (result, config) => showPairs(summarize(result, config, imagePairs)),
  heatmap: (result, config) => showPairs(summarize(result, config, heatmapPairs)),
  keypoints: (result, config) => showPairs(summarize(result, config, heatmapPairs)),
};

function summarize(result, config, pairs) {
  const head = result.outputs[config.outputs[0].name];
  return head ? pairs(head) : null;
}

function showPairs(pairs) {
  if (!pairs) return false;
  $('values').replaceChildren(...pairs.flatMap(([k, v]) => [textElement('dt', '', k), textElement('dd', '', v)]));
  $('values').hidden = false;
  return true;
}

// An embedding is a vector compared with other vectors (cosine): its size, its length and its first values.
function embeddingPairs(head) {
  const v = firstSample(head).map(Number);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return [['embedding', `${v.length} values, compared by cosine similarity (no class to show)`],
    ['L2 norm', norm.toPrecision(4)], ...v.slice(0, 8).map((x, i) => [`[${i}]`, x.toPrecision(4)])];
}

// An image out: its shape and value range (the page does not draw it).
function imagePairs(head) {
  const v = firstSample(head).map(Number);
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  return [['image out', head.shape.slice(1).join(' × ')],
    ['min / mean / max', [Math.min(...v), mean, Math.max(...v)].map((x) => x.toPrecision(4)).join(' / ')]];
}

// Keypoint heatmaps [1, H, W, K]: each keypoint at its map's maximum (row, column).
function heatmapPairs(head) {
  if (head.shape.length !== 4) return null;
  const [h, w, k] = head.shape.slice(1);
  const v = firstSample(head).map(Number);
  const rows = [];
  for (let c = 0; c < k; c++) {
    let best = 0;
    for (let p = 1; p < h * w; p++) if (v[p * k + c] > v[best * k + c]) best = p;
    rows.push([`keypoint ${c}`, `row ${Math.floor(best / w)}, column ${best % w} (peak ${v[best * k + c].toPrecision(3)})`]);
  }
  return rows;
}

// A predict() result on the page (the first sample of a batch), shown as its task says (config.task).
// page: {inputCanvas(): a canvas holding the model's input image, or null; chooser: the Backend select's engine}.
export function showResult(result, config, page = { inputCanvas: () => null, chooser: null }) {
  const task = (config.task && config.task.name) || 'classification';
  $('seg').hidden = true;
  $('values').hidden = true;
  const view = VIEWS[task];
  const shownFirst = view ? view(result, config, page) : false;
  const top = result.top && Array.isArray(result.top[0]) ? result.top[0] : (result.top || []);
  const ranked = !view && config.outputs[0].kind === 'classes';
  showHeads(result.outputs || {}, config, shownFirst || ranked);
  $('top').replaceChildren(...(ranked ? top.map(topItem) : []));
  showLatency(result, page.chooser);
}

export function clearResult() {
  $('top').replaceChildren();
  $('seg').hidden = true;
  $('values').hidden = true;
}

// backends: the backends of the engine that has a choice of them (names, bench, skipped).
export function fillBenchTable(backends) {
  const { bench, skipped } = backends;
  $('bench').replaceChildren(...backends.names.map((name) => {
    const tr = document.createElement('tr');
    tr.append(textElement('td', '', name), textElement('td', '', name in bench
      ? `${bench[name].toFixed(2)} ms / inference (median, warm)` : skipped[name]));
    return tr;
  }));
}
