// The prediction card: ranked top-k bars, the other output heads, the latency, the backend micro-benchmark table.
import { firstSample, headSummary, headTitle, percent } from '../postprocess.js';
import { $, textElement } from './dom.js';

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

// Every head except a ranked primary one: its first sample as top-k (probability-like) or raw values.
function showHeads(heads, config) {
  const shown = config.outputs.filter((o, i) => heads[o.name] && (i > 0 || o.kind !== 'classes'));
  $('heads').hidden = shown.length === 0;
  $('heads').replaceChildren(...shown.map((o) => {
    const box = document.createElement('div');
    box.className = 'head';
    box.append(textElement('h3', '', headTitle(o.name, heads[o.name].shape)),
      textElement('p', 'values', headSummary(firstSample(heads[o.name]), config.topK)));
    return box;
  }));
}

function showLatency(result) {
  $('latency').textContent = `${result.ms.toFixed(2)} ms`;
  if (result.engine === 'tfjs') $('backend').value = result.backend;
}

// A predict() result on the page (the first sample of a batch).
export function showResult(result, config) {
  const top = Array.isArray(result.top[0]) ? result.top[0] : result.top;
  showHeads(result.outputs || {}, config);
  $('top').replaceChildren(...(config.outputs[0].kind === 'classes' ? top.map(topItem) : []));
  showLatency(result);
}

export const clearResult = () => $('top').replaceChildren();

// backends: the tfjs engine's backends (names, bench, skipped).
export function fillBenchTable(backends) {
  const { bench, skipped } = backends;
  $('bench').replaceChildren(...backends.names.map((name) => {
    const tr = document.createElement('tr');
    tr.append(textElement('td', '', name), textElement('td', '', name in bench
      ? `${bench[name].toFixed(2)} ms / inference (median, warm)` : skipped[name]));
    return tr;
  }));
}
