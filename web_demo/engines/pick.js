// Which engine the page runs: ?engine=NAME, else the one remembered for this model and browser (pick-cache.js), else
// the fastest median of ENGINE_RUNS warm runs each. The memory also keeps the backend pick of an engine that has one
// (engines/engine.js: choose/choice), so a second visit benchmarks nothing.
import { median } from '../postprocess.js';
import { browserStorage, choiceKey, readChoice, writeChoice } from './pick-cache.js';

const ENGINE_RUNS = 3; // timed warm runs per engine in the engine pick (each engine was warmed up when it loaded)

// config: the page config; chooser: the engine with a backend choice of its own (the tfjs one), or null.
// -> {recall(working), save(entry), remembered}: the pick memory of this model in this browser. The key is made
// when first needed (once the backends initialised: it names the wasm threads and the WebGPU adapter).
export function createMemory(config, chooser) {
  const memory = { remembered: null, key: null, storage: null };
  function open() {
    const tflites = config.litert ? [config.litert, ...(config.litert.variants || [])] : [];
    const parts = chooser ? chooser.cacheKey : { hash: 'litert', threads: null, gpu: null };
    const hash = parts.hash && [...(chooser ? [parts.hash] : []), ...tflites.map((m) => m.sha256)].join('+');
    memory.storage = browserStorage();
    memory.key = memory.storage && hash && choiceKey(hash, navigator.userAgent, parts.threads, parts.gpu);
  }
  return {
    get remembered() { return memory.remembered; },
    // working: the chooser's working backends (null: no chooser) -> the remembered entry or null
    recall(working) {
      open();
      memory.remembered = memory.key ? readChoice(memory.storage, memory.key, working) : null;
      return memory.remembered;
    },
    save(entry) {
      if (!memory.key) open();
      if (memory.key) writeChoice(memory.storage, memory.key, entry);
    },
  };
}

// The engine the page will use without benchmarking: ?engine=NAME, else the remembered pick (null: neither).
export function firstEngine(names, options, remembered) {
  const mem = remembered || {};
  return [options.engine, mem.engine].find((n) => n && names.includes(n)) || null;
}

// engines: {name: engine} (loaded and warm, or listed cold: warm(name) first); -> {engine, pick: {picked, bench}}.
// A benchmark pick is remembered with the chooser's backend pick (?backend=NAME never writes the memory).
export async function pickEngine(engines, options, memory, chooser, warm) {
  const names = Object.keys(engines);
  if (names.length < 2) return { engine: names[0], pick: { picked: 'only', bench: {} } };
  if (engines[options.engine]) return { engine: options.engine, pick: { picked: 'query', bench: {} } };
  const mem = memory.remembered;
  if (mem && mem.engine && names.includes(mem.engine)) {
    return { engine: mem.engine, pick: { picked: 'remembered', bench: mem.engineBench } };
  }
  const bench = {};
  for (const name of names) {
    await warm(name);
    bench[name] = median((await engines[name].time(ENGINE_RUNS, 0)).times);
  }
  const best = names.reduce((a, b) => (bench[b] < bench[a] ? b : a));
  if (!chooser || chooser.backends.picked !== 'query') {
    memory.save({ ...(chooser ? chooser.choice() : {}), engine: best, engineBench: bench });
  }
  return { engine: best, pick: { picked: 'benchmark', bench } };
}
