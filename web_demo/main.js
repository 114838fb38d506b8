// The page's wiring: loads the page config and the engines (engines/load.js), picks one (engines/pick.js), builds the
// input UI (ui/inputs.js), runs predictions and shows them per task (ui/results.js); start() returns the controller
// app.js exposes as window.edgetool (api.js). Engines are only used through engines/engine.js's interface: nothing
// here knows which runtime or backend runs. All mutable page state lives in start()'s `state`.
import { checkFeeds, loadConfig, pageOptions, toFeeds, zeroFeeds } from './config.js';
import { loadEngines, warmLiteRt } from './engines/load.js';
import { createMemory, firstEngine, pickEngine } from './engines/pick.js';
import { withRanking } from './postprocess.js';
import { addEngineSelect, fillBackendSelect, fillThreadsSelect, showEngine, showEngineTitle } from './ui/controls.js';
import { $, setStatus, startServiceWorker } from './ui/dom.js';
import { setupInputs } from './ui/inputs.js';
import { clearResult, fillBenchTable, showResult } from './ui/results.js';

function deferred() {
  const d = {};
  d.promise = new Promise((resolve, reject) => { d.resolve = resolve; d.reject = reject; });
  d.promise.catch(() => {});
  return d;
}

// config: the page config; engines: {name: engine} in Select order; engine: the active one's name; chooser: the
// engine with a backend choice of its own (null: none); inputs: ui/inputs.js's reader; busy/pending: a UI prediction
// runs / another one is wanted; lastInput: the UI's last feeds (re-predicted when the engine or backend changes);
// lastResult: the last result computed (UI or API); memory: the pick memory (engines/pick.js); enginePick: how the
// engine was chosen, with its timings; cold: engines listed but not run yet (warmed when chosen); skipped: engines
// that could not load -> why.
function newState() {
  return { config: null, engines: {}, engine: null, chooser: null, inputs: null, busy: false, pending: false,
    lastInput: null, lastResult: null, timings: {}, memory: null, enginePick: null, cold: new Set(), skipped: {} };
}

// Load the engines; the chooser picks its backend (remembered); the LiteRT.js ones get their first run.
async function loadAndWarm(state, options, mark) {
  const { config } = state;
  const { chooser, litert } = await loadEngines(config, options, mark, state.skipped);
  state.chooser = chooser;
  state.memory = createMemory(config, chooser);
  if (chooser) {
    state.engines[chooser.name] = chooser;
    await chooser.choose(state.memory);
  } else {
    state.memory.recall(null);
  }
  mark('warm');
  const names = [...Object.keys(state.engines), ...litert.map((e) => e.name)];
  await warmLiteRt(litert, firstEngine(names, options, state.memory.remembered), config, state);
  if (config.litert) mark('litert');
}

// The controls: Engine select (more than one engine), Backend and threads selects (the chooser's), bench table.
// setEngine/setBackend: the controller's switches.
function fillControls(state, { setEngine, setBackend }) {
  const { chooser } = state;
  if (Object.keys(state.engines).length > 1) {
    addEngineSelect(Object.values(state.engines).map((e) => [e.name, e.label]), async (name) => setEngine(name));
  }
  if (!chooser) return;
  fillBackendSelect(chooser.backends.names, chooser.backend, setBackend);
  fillBenchTable(chooser.backends);
  fillThreadsSelect(chooser.threads);
}

// What window.edgetool.ready resolves to.
function readyInfo(state) {
  const { chooser } = state;
  const litert = Object.values(state.engines).find((e) => e.runtime);
  return { backend: chooser ? chooser.backend : null, backends: chooser ? chooser.backends.names : [],
    benchmark: chooser ? chooser.backends.bench : {}, picked: chooser ? chooser.backends.picked : null,
    runtime: chooser ? chooser.runtimeInfo() : null, engine: state.engine, engines: Object.keys(state.engines),
    enginePick: state.enginePick, coldEngines: [...state.cold], skippedEngines: state.skipped,
    litert: litert ? litert.runtime : null };
}

// Start the page; returns its controller (what api.js exposes as window.edgetool).
export function start() {
  const options = pageOptions(window.location.search);
  const ready = deferred();
  const state = newState();
  const mark = (name) => { state.timings[name] = performance.now(); }; // ms since navigation start
  const active = () => state.engines[state.engine];

  // feeds: {inputName: {values, shape}}. Result: the ranked head (probabilities, top: per task) plus every head.
  async function run(feeds) {
    const { config } = state;
    const batch = checkFeeds(config.inputs, feeds);
    const engine = active();
    const raw = await engine.run(feeds);
    state.lastResult = withRanking(raw, { name: config.outputs[0].name, batch, tolerance: engine.probTolerance,
      labels: config.labels, k: config.topK, task: config.task && config.task.name,
      activation: config.outputs[0].activation });
    return state.lastResult;
  }

  const view = () => ({ inputCanvas: () => (state.inputs ? state.inputs.inputCanvas() : null),
    chooser: state.chooser && state.chooser.name });

  async function runAndShow(feeds) {
    const result = await run(feeds);
    showResult(result, state.config, view());
    return result;
  }

  const showEngineName = () => showEngineTitle(active().title, state.config);

  async function predictFromUi() {
    if (state.busy) { state.pending = true; return; }
    state.busy = true;
    try {
      do {
        state.pending = false;
        const feeds = state.inputs.read();
        if (feeds === null) { clearResult(); setStatus(state.inputs.prompt); break; }
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

  async function predict(values, shape) {
    const feeds = toFeeds(state.config.inputs, values, shape);
    const result = await runAndShow(feeds);
    if (state.inputs) state.inputs.show(feeds);
    return result;
  }

  async function setBackend(name) {
    const { chooser } = state;
    if (!chooser) throw new Error('this page has no backend choice (its engines run on LiteRT.js builds)');
    const now = await chooser.switchBackend(name);
    fillBenchTable(chooser.backends);
    $('backend').value = name;
    showEngineName();
    if (state.lastInput) await predictFromUi();
    return now;
  }

  async function setEngine(name) {
    if (!(name in state.engines)) {
      throw new Error(`engine ${name} is not available here; choose one of ${Object.keys(state.engines).join(', ')}`);
    }
    await warm(name);
    state.engine = name;
    showEngine(name, state.engines[name] === state.chooser, state.chooser ? state.chooser.backends.names.length : 0);
    showEngineName();
    if (state.lastInput) await predictFromUi();
    return name;
  }

  // An engine listed cold gets its first run now; one that fails it is dropped (Error naming it).
  async function warm(name) {
    if (!state.cold.has(name)) return;
    state.cold.delete(name);
    try {
      await state.engines[name].run(zeroFeeds(state.config.inputs));
    } catch (err) {
      delete state.engines[name];
      for (const opt of $('engine') ? [...$('engine').options] : []) if (opt.value === name) opt.remove();
      if ($('engine')) $('engine').value = state.engine;
      throw new Error(`engine ${name} failed its first run (${err.message}); it was removed`);
    }
  }

  async function main() {
    await startServiceWorker(); // so the engines' wasm builds are fetched once, through it, and kept for offline use
    mark('serviceWorker');
    state.config = await loadConfig();
    const { config } = state;
    mark('config');
    $('engine-name').textContent = [config.litert && 'LiteRT.js', config.modelUrl && 'TensorFlow.js']
      .filter(Boolean).join(' or ') + (config.litert && config.modelUrl ? ' (the faster one here)' : '');
    await loadAndWarm(state, options, mark);
    const picked = await pickEngine(state.engines, options, state.memory, state.chooser, warm);
    state.enginePick = picked.pick;
    state.engine = Object.keys(state.engines)[0];
    fillControls(state, { setEngine, setBackend });
    await setEngine(picked.engine);
    state.inputs = setupInputs(config, { onInput: predictFromUi, onClear: () => { state.lastInput = null; clearResult(); } });
    showEngineName();
    const warning = state.chooser && state.engine === state.chooser.name ? state.chooser.warning(active().backend) : '';
    setStatus(`Ready (${active().shortName}).${warning ? ` ${warning}` : ''}${state.inputs.prompt ? ` ${state.inputs.prompt}` : ''}`);
    mark('ready');
    ready.resolve(readyInfo(state));
  }

  main().catch((err) => {
    console.error(err);
    setStatus(`Could not start: ${err.message}`, true);
    ready.reject(err);
  });

  const backends = () => (state.chooser ? state.chooser.backends : null);
  return {
    ready: ready.promise,
    predict,
    setBackend,
    setEngine,
    timeInference: (runs, warmup) => warm(state.engine).then(() => active().time(runs, warmup)),
    get backend() { return state.chooser ? state.chooser.backend : null; },
    get backends() { return backends() ? backends().names : []; },
    get engine() { return state.engine; },
    get engines() { return Object.keys(state.engines); },
    get benchmark() { return backends() ? backends().bench : {}; },
    get config() { return state.config; },
    get runtime() { return state.chooser ? state.chooser.runtimeInfo() : null; },
    get timings() { return { ...state.timings }; },
    get lastInput() { return state.lastInput; },
    get lastResult() { return state.lastResult; },
  };
}
