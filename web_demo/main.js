// The page's wiring: loads the page config and the engines, builds the input UI, runs predictions; start() returns
// the controller app.js exposes as window.edgetool (api.js). All mutable page state lives in start()'s `state`.
import { checkFeeds, imageInputOf, loadConfig, pageOptions, toFeeds, zeroFeeds } from './config.js';
import { browserStorage, choiceKey, readChoice, writeChoice } from './engines/pick-cache.js';
import { createTfjsEngine } from './engines/tfjs.js';
import { median, withRanking } from './postprocess.js';
import { addEngineSelect, fillBackendSelect, fillThreadsSelect, showEngine, showEngineTitle } from './ui/controls.js';
import { $, setStatus, startServiceWorker } from './ui/dom.js';
import { readFields, setupForm } from './ui/form.js';
import { createPad, PROMPTS } from './ui/pad.js';
import { clearResult, fillBenchTable, showResult } from './ui/results.js';

const ENGINE_RUNS = 3; // timed warm runs per engine in the engine pick (each engine was warmed up when it loaded)

function deferred() {
  const d = {};
  d.promise = new Promise((resolve, reject) => { d.resolve = resolve; d.reject = reject; });
  d.promise.catch(() => {});
  return d;
}

// Start the page; returns its controller (what api.js exposes as window.edgetool).
export function start() {
  const options = pageOptions(window.location.search);
  const ready = deferred();
  // config: the page config; engines: {tfjs, litert?} in Select order; engine: the active one's name;
  // pad: the image input (null: none); formInputs: the inputs the form feeds; busy/pending: a UI prediction runs /
  // another one is wanted; lastInput: the UI's last feeds (re-predicted when the engine or backend changes);
  // lastResult: the last result computed (UI or API);
  // remembered: the auto-pick entry read from storage; enginePick: how the engine was chosen, with its timings;
  // cold: engines listed but not run yet (warmed when chosen); skipped: engines that could not load -> why.
  const state = { config: null, engines: {}, engine: 'tfjs', pad: null, formInputs: [], busy: false, pending: false,
    lastInput: null, lastResult: null, timings: {}, remembered: null, enginePick: null, cold: new Set(), skipped: {} };
  const mark = (name) => { state.timings[name] = performance.now(); }; // ms since navigation start
  const tfjsEngine = () => state.engines.tfjs;

  // feeds: {inputName: {values, shape}}. Result: the ranked head (probabilities, top) plus every head's raw values.
  async function run(feeds) {
    const { config } = state;
    const batch = checkFeeds(config.inputs, feeds);
    const engine = state.engines[state.engine];
    const raw = await engine.run(feeds);
    state.lastResult = withRanking(raw, { name: config.outputs[0].name, batch, tolerance: engine.probTolerance,
      labels: config.labels, k: config.topK });
    return state.lastResult;
  }

  const showEngineName = () => showEngineTitle(state.engines[state.engine].title, state.config);

  async function runAndShow(feeds) {
    const result = await run(feeds);
    showResult(result, state.config);
    return result;
  }

  // Every input's current value from the page: the pad (image input) and the form (all others); null: nothing drawn.
  function currentInput() {
    const feeds = readFields(state.formInputs);
    if (!state.pad) return feeds;
    const image = state.pad.read();
    return image && { ...feeds, ...image };
  }

  async function predictFromUi() {
    if (state.busy) { state.pending = true; return; }
    state.busy = true;
    try {
      do {
        state.pending = false;
        const feeds = currentInput();
        if (feeds === null) { clearResult(); setStatus(PROMPTS.draw); break; }
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
    if (state.pad) state.pad.show(feeds);
    return result;
  }

  async function setBackend(name) {
    const { backends } = tfjsEngine();
    const active = await backends.switchTo(name);
    fillBenchTable(backends);
    $('backend').value = name;
    showEngineName();
    if (state.lastInput) await predictFromUi();
    return active;
  }

  async function setEngine(name) {
    if (!(name in state.engines)) {
      throw new Error(`engine ${name} is not available here; choose one of ${Object.keys(state.engines).join(', ')}`);
    }
    await warm(name);
    state.engine = name;
    showEngine(name, tfjsEngine().backends.names.length);
    showEngineName();
    if (state.lastInput) await predictFromUi();
    return name;
  }

  // Fetch and compile the LiteRT.js engines (sites built with --litert: one per .tflite) -> those that loaded; tfjs
  // keeps working without them, and one .tflite that fails does not keep the others out.
  async function loadLiteRtEngines() {
    const { config } = state;
    const loaded = [];
    try {
      const mod = await import(new URL(config.litert.module, window.location.href).href);
      for (const engine of mod.createEngines(config.litert, config, options)) {
        try {
          await engine.load();
          loaded.push(engine);
        } catch (err) {
          state.skipped[engine.name] = err.message; console.warn(`LiteRT.js engine ${engine.name} unavailable:`, err);
        }
      }
    } catch (err) {
      console.warn('LiteRT.js engine unavailable:', err);
    }
    return loaded;
  }

  // Warm the loaded LiteRT.js engines up (first run: XNNPACK's first-run set-up), add them and the Engine select.
  // With `first` (the engine ?engine=NAME or a remembered pick will use) only that one is warmed before the page is
  // ready: a return visit does not wait for engines it will not run. The others are listed cold and warmed when
  // chosen (setEngine); without `first` every engine is warmed, for the engine micro-benchmark.
  async function addLiteRtEngines(loaded, first) {
    for (const engine of loaded) {
      if (first && engine.name !== first) {
        state.engines[engine.name] = engine;
        state.cold.add(engine.name);
        continue;
      }
      try {
        await engine.run(zeroFeeds(state.config.inputs));
        state.engines[engine.name] = engine;
      } catch (err) {
        state.skipped[engine.name] = err.message; console.warn(`LiteRT.js engine ${engine.name} failed its first run:`, err);
      }
    }
    if (Object.keys(state.engines).length < 2) return;
    addEngineSelect(Object.values(state.engines).map((e) => [e.name, e.label]), async (name) => setEngine(name));
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

  // The auto-pick's cache key and entry: model hash (tfjs graph + weights, and each .tflite's SHA-256), user agent,
  // wasm threads (engines/pick-cache.js).
  function pickKey(tfjs) {
    const storage = browserStorage();
    const tflites = state.config.litert ? [state.config.litert, ...(state.config.litert.variants || [])] : [];
    const hash = tfjs.modelHash && [tfjs.modelHash, ...tflites.map((m) => m.sha256)].join('+');
    const { wasmThreads, gpuAdapter } = tfjs.backends.runtime();
    const key = storage && hash && choiceKey(hash, navigator.userAgent, wasmThreads, gpuAdapter);
    return { storage, key };
  }

  // The tfjs backend pick, remembered (the entry read is kept for the engine pick).
  async function pickBackend(tfjs) {
    const { backends } = tfjs;
    let mem = {}; // {storage, key}: made in recall(), once the backends initialised (the key names the WebGPU adapter)
    const recall = (names) => { mem = pickKey(tfjs);
      return (state.remembered = mem.key ? readChoice(mem.storage, mem.key, names) : null); };
    const best = await backends.pick(recall);
    if (mem.key && backends.picked === 'benchmark') {
      writeChoice(mem.storage, mem.key, { backend: best, bench: backends.bench, skipped: backends.skipped });
    }
    return best;
  }

  // The engine the page will use without benchmarking: ?engine=NAME, else the remembered pick (null: neither).
  function firstEngine(loaded) {
    const names = ['tfjs', ...loaded.map((e) => e.name)];
    const mem = state.remembered || {};
    return [options.engine, mem.engine].find((n) => n && names.includes(n)) || null;
  }

  // Engine x artefact (tfjs graph model on its picked backend, LiteRT.js int8 / fp32): ?engine=NAME, else the
  // remembered pick, else the fastest median of ENGINE_RUNS warm runs each (remembered with the backend pick).
  async function pickEngine(tfjs) {
    const names = Object.keys(state.engines);
    state.enginePick = { picked: 'only', bench: {} };
    if (names.length < 2) return 'tfjs';
    if (state.engines[options.engine]) { state.enginePick.picked = 'query'; return options.engine; }
    const mem = state.remembered;
    if (mem && mem.engine && names.includes(mem.engine)) {
      state.enginePick = { picked: 'remembered', bench: mem.engineBench };
      return mem.engine;
    }
    const bench = {};
    for (const name of names) bench[name] = median((await state.engines[name].time(ENGINE_RUNS, 0)).times);
    const best = names.reduce((a, b) => (bench[b] < bench[a] ? b : a));
    state.enginePick = { picked: 'benchmark', bench };
    const { storage, key } = pickKey(tfjs);
    const { backends } = tfjs;
    if (key && backends.picked !== 'query') { // ?backend=NAME never writes the memory
      writeChoice(storage, key, { backend: tf.getBackend(), bench: backends.bench, skipped: backends.skipped,
        engine: best, engineBench: bench });
    }
    return best;
  }

  function setupInputs() {
    const { config } = state;
    const imageInput = imageInputOf(config);
    state.formInputs = config.inputs.filter((inp) => inp !== imageInput);
    setupForm(state.formInputs, config.inputs.length > 1, predictFromUi);
    if (!imageInput) return;
    state.pad = createPad(imageInput, config.draw, {
      onInput: predictFromUi,
      onClear: () => { state.lastInput = null; clearResult(); setStatus(PROMPTS.draw); },
    });
  }

  async function main() {
    await startServiceWorker(); // so the engines' wasm builds are fetched once, through it, and kept for offline use
    mark('serviceWorker');
    state.config = await loadConfig();
    const { config } = state;
    mark('config');
    const tfjs = createTfjsEngine(config, options);
    state.engines.tfjs = tfjs;
    $('engine-name').textContent = config.litert ? 'LiteRT.js or TensorFlow.js (the faster one here)' : 'TensorFlow.js';
    // LiteRT.js fetches and compiles while tfjs does (both mostly wait on fetches and wasm compiles), and is done
    // before any micro-benchmark starts, so no timing runs beside a compile
    const litert = config.litert ? loadLiteRtEngines() : Promise.resolve([]);
    await tfjs.load(mark);
    const litertLoaded = await litert;
    mark('litertLoaded');
    const best = await pickBackend(tfjs);
    mark('warm');
    if (config.litert) {
      await addLiteRtEngines(litertLoaded, firstEngine(litertLoaded));
      mark('litert');
    }
    const engine = await pickEngine(tfjs);
    fillBackendSelect(tfjs.backends.names, best, setBackend);
    fillBenchTable(tfjs.backends);
    fillThreadsSelect(tfjs.backends.runtime().wasmThreads);
    if (engine !== 'tfjs') await setEngine(engine); // ?engine=NAME or the engine pick
    setupInputs();
    showEngineName();
    const warning = tfjs.backends.nonFinite.includes(best)
      ? ' Warning: every TensorFlow.js backend here gives NaN/Inf outputs for a blank input.' : '';
    const running = state.engine === 'tfjs' ? best : state.engines[state.engine].label; // (best: the tfjs backend)
    setStatus(`Ready (${running}).${warning}${state.pad ? ` ${PROMPTS[state.pad.style]}` : ''}`);
    mark('ready');
    ready.resolve({ backend: best, backends: tfjs.backends.names, benchmark: tfjs.backends.bench,
      picked: tfjs.backends.picked, runtime: tfjs.backends.runtime(), engine: state.engine,
      engines: Object.keys(state.engines), enginePick: state.enginePick, coldEngines: [...state.cold], skippedEngines: state.skipped,
      litert: (Object.values(state.engines).find((e) => e.runtime) || {}).runtime || null });
  }

  main().catch((err) => {
    console.error(err);
    setStatus(`Could not start: ${err.message}`, true);
    ready.reject(err);
  });

  const backends = () => (tfjsEngine() ? tfjsEngine().backends : null);
  return {
    ready: ready.promise,
    predict,
    setBackend,
    setEngine,
    timeInference: (runs, warmup) => warm(state.engine).then(() => state.engines[state.engine].time(runs, warmup)),
    get backends() { return backends() ? backends().names : []; },
    get engine() { return state.engine; },
    get engines() { return Object.keys(state.engines); },
    get benchmark() { return backends() ? backends().bench : {}; },
    get config() { return state.config; },
    get runtime() { return backends() ? backends().runtime() : null; },
    get timings() { return { ...state.timings }; },
    get lastInput() { return state.lastInput; },
    get lastResult() { return state.lastResult; },
  };
}

