// The selects of the prediction card: Backend (tfjs), wasm threads (reloads the page), Engine (--litert sites).
import { mostThreads } from '../engines/tfjs-backends.js';
import { modelInfoText } from '../config.js';
import { $, option, setStatus } from './dom.js';

// onChange(name) switches and resolves when done; its failure is shown as the status.
function onSelect(select, onChange, done) {
  select.addEventListener('change', async () => {
    try { await onChange(select.value); setStatus(done(select)); } catch (err) { setStatus(err.message, true); }
  });
}

export function fillBackendSelect(names, active, onChange) {
  const select = $('backend');
  select.replaceChildren(...names.map((name) => option(name, name)));
  select.value = active;
  select.disabled = names.length < 2;
  onSelect(select, onChange, (s) => `Switched to ${s.value}.`);
}

// wasm threads are fixed when the wasm backend starts: changing them reloads the page with ?threads=N.
export function fillThreadsSelect(current) {
  const select = $('threads');
  if (current === null) return;
  const most = mostThreads(current);
  select.replaceChildren(...Array.from({ length: most }, (_, i) => option(String(i + 1), String(i + 1))));
  select.value = String(current);
  select.disabled = most < 2;
  select.title = window.crossOriginIsolated ? 'wasm threads' : 'single-threaded: the page is not cross-origin isolated';
  select.addEventListener('change', () => {
    const params = new URLSearchParams(window.location.search);
    params.set('threads', select.value);
    window.location.search = params.toString();
  });
}

// The Engine row, shown just before the Backend row: one option per engine ([name, label]).
export function addEngineSelect(engines, onChange) {
  const select = document.createElement('select');
  select.id = 'engine';
  select.setAttribute('aria-label', 'engine');
  select.replaceChildren(...engines.map(([name, label]) => option(name, label)));
  const dt = document.createElement('dt');
  dt.textContent = 'Engine';
  const dd = document.createElement('dd');
  dd.append(select);
  $('backend').closest('dd').previousElementSibling.before(dt, dd);
  onSelect(select, onChange, (s) => `Switched to ${s.selectedOptions[0].textContent}.`);
}

// The Backend and threads selects only apply to the tfjs engine.
export function showEngine(name, backendCount) {
  if ($('engine')) $('engine').value = name; // (no Engine select: tfjs is the only engine)
  $('backend').disabled = name !== 'tfjs' || backendCount < 2;
  $('threads').disabled = name !== 'tfjs' || $('threads').options.length < 2;
}

// The header and the footer name the engine running now (title: engines/engine.js, with its backend or wasm build).
export function showEngineTitle(title, config) {
  $('engine-name').textContent = title;
  $('model-info').textContent = modelInfoText(config, title);
}
