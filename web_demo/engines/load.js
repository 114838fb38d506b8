// The site's engines (engines/engine.js): the TensorFlow.js one when the site has its graph model (config.modelUrl;
// a --litert site whose model tensorflowjs cannot convert has none), and one LiteRT.js engine per .tflite and wasm
// thread count on sites built with --litert. Both kinds fetch and compile at once; the tfjs engine's backend pick
// runs after both loaded, so no micro-benchmark times beside a compile.
import { zeroFeeds } from '../config.js';

// -> the tfjs engine (loaded) or null; mark(name) records start-up timings.
async function loadTfjs(config, options, mark) {
  if (!config.modelUrl) return null;
  const { createTfjsEngine } = await import('./tfjs.js');
  const engine = createTfjsEngine(config, options);
  await engine.load(mark);
  return engine;
}

// The LiteRT.js engines that loaded; one that fails does not keep the others out (skipped: name -> why).
async function loadLiteRt(config, options, skipped) {
  if (!config.litert) return [];
  const loaded = [];
  try {
    const mod = await import(new URL(config.litert.module, window.location.href).href);
    for (const engine of mod.createEngines(config.litert, config, options)) {
      try {
        await engine.load();
        loaded.push(engine);
      } catch (err) {
        skipped[engine.name] = err.message; console.warn(`LiteRT.js engine ${engine.name} unavailable:`, err);
      }
    }
  } catch (err) {
    console.warn('LiteRT.js engine unavailable:', err);
  }
  return loaded;
}

// -> {chooser: the tfjs engine or null, litert: the LiteRT.js engines that loaded}; Error when none did.
export async function loadEngines(config, options, mark, skipped) {
  const litert = loadLiteRt(config, options, skipped);
  const chooser = await loadTfjs(config, options, mark);
  const loaded = await litert;
  mark('litertLoaded');
  if (!chooser && !loaded.length) {
    throw new Error(`no engine could load the model (${Object.entries(skipped).map(([n, why]) => `${n}: ${why}`).join('; ')
      || 'the LiteRT.js runtime did not load'})`);
  }
  return { chooser, litert: loaded };
}

// Give the LiteRT.js engines their first run (XNNPACK's first-run set-up) and add them to `engines` ({name: engine}).
// With `first` (the engine ?engine=NAME or a remembered pick will use) only that one is warmed now: a return visit
// does not wait for engines it will not run; the others go into `cold` (warmed when chosen). One that fails its
// first run is left out (skipped: name -> why).
export async function warmLiteRt(loaded, first, config, { engines, cold, skipped }) {
  for (const engine of loaded) {
    if (first && engine.name !== first) {
      engines[engine.name] = engine;
      cold.add(engine.name);
      continue;
    }
    try {
      await engine.run(zeroFeeds(config.inputs));
      engines[engine.name] = engine;
    } catch (err) {
      skipped[engine.name] = err.message; console.warn(`LiteRT.js engine ${engine.name} failed its first run:`, err);
    }
  }
}
