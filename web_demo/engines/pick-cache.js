// The auto-pick's choice, remembered per model and browser (localStorage), so a second visit skips the backend
// and engine micro-benchmarks. Keyed by the SHA-256 of the model (graph + weights, plus the SHA-256 of each LiteRT.js
// .tflite on --litert sites), the user agent, the wasm thread count and the WebGPU adapter: another model, browser version, thread
// count or GPU benchmarks again. Pure apart from modelHash's Web Crypto call;
// tests/js/pick-cache.test.mjs runs it in Node.

const PREFIX = 'edgetool:auto-pick:v1:';

// SHA-256 (hex) of a tfjs model's artifacts: its graph, weight manifest and weight bytes; null without Web Crypto
// (pages not served from https or localhost).
export async function modelHash(artifacts, subtle = globalThis.crypto && globalThis.crypto.subtle) {
  if (!subtle) return null;
  const parts = [new TextEncoder().encode(JSON.stringify([artifacts.modelTopology, artifacts.weightSpecs]))];
  for (const buffer of [].concat(artifacts.weightData || [])) { // digest each weight buffer as it is (no copy)
    parts.push(new Uint8Array(await subtle.digest('SHA-256', buffer)));
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((offset, p) => { all.set(p, offset); return offset + p.length; }, 0);
  const digest = new Uint8Array(await subtle.digest('SHA-256', all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

// gpu: the WebGPU adapter ('vendor/architecture', null: none), so a pick made on one GPU is not reused on another
export const choiceKey = (hash, userAgent, threads, gpu = null) => `${PREFIX}${hash}:${threads}:${userAgent}`
  + (gpu ? `:gpu=${gpu}` : '');

// window.localStorage, or null where the browser refuses it (storage disabled).
export function browserStorage() {
  try {
    return window.localStorage;
  } catch (err) {
    return null;
  }
}

// The remembered choice {backend, bench: {name: ms}, skipped: {name: reason}, engine, engineBench: {name: ms}}, or
// null (none, unreadable, or naming a backend that does not work here any more). engine is null unless the entry
// names one with a finite time (sites with one engine never store one; main.js checks it is still loaded).
// working: the backends that work here; null on sites without a backend choice (LiteRT.js only: only the engine
// is remembered, and an entry without one is no entry).
export function readChoice(storage, key, working) {
  try {
    const choice = JSON.parse(storage.getItem(key));
    const valid = choice && (working === null ? typeof choice.engine === 'string'
      : typeof choice.backend === 'string' && working.includes(choice.backend)
        && choice.bench && Number.isFinite(choice.bench[choice.backend]));
    if (!valid) return null;
    const engineBench = { ...choice.engineBench };
    const engine = typeof choice.engine === 'string' && Number.isFinite(engineBench[choice.engine]) ? choice.engine : null;
    return { backend: choice.backend ?? null, bench: { ...choice.bench }, skipped: { ...choice.skipped }, engine, engineBench };
  } catch (err) {
    return null; // storage disabled or the entry is not JSON
  }
}

export function writeChoice(storage, key, choice) {
  try {
    storage.setItem(key, JSON.stringify(choice));
  } catch (err) {
    console.warn('could not remember the backend pick:', err); // quota, or storage disabled
  }
}
