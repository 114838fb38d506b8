// The selects of the prediction card: Backend and wasm threads (reloads the page) of an engine with a backend choice
// (engines/engine.js), Engine (--litert sites).
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
// threads: {current, most} (null: no wasm threads to choose).
export function fillThreadsSelect(threads) {
  const select = $('threads');
  if (!threads) return;
  const { current, most } = threads;
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

// The Backend and threads selects only apply to the engine that has a backend choice (chooses: it runs now).
export function showEngine(name, chooses, backendCount) {
  if ($('engine')) $('engine').value = name; // (no Engine select: one engine)
  $('backend').disabled = !chooses || backendCount < 2;
  $('threads').disabled = !chooses || $('threads').options.length < 2;
}

// The header and the footer name the engine running now (title: engines/engine.js, with its backend or wasm build).
export function showEngineTitle(title, config) {
  $('engine-name').textContent = title;
  $('model-info').textContent = modelInfoText(config, title);
}
