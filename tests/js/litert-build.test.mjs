// node --test: which LiteRT.js wasm build the page loads (web_demo/engines/litert-build.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import { chooseBuild, RELAXED_SIMD_PROBE, THREADS_PROBE, wasmFeatures } from '../../web_demo/engines/litert-build.js';

const ALL = { compat: 'c.js', default: 'd.js', threaded: 't.js' };

// A browser-like environment whose WebAssembly.validate accepts exactly the probes listed in `supports`.
function env({ relaxed, shared, isolated = true, sab = true }) {
  const supports = [relaxed && RELAXED_SIMD_PROBE, shared && THREADS_PROBE].filter(Boolean);
  return { crossOriginIsolated: isolated, SharedArrayBuffer: sab ? SharedArrayBuffer : undefined,
    WebAssembly: { validate: (bytes) => supports.some((p) => p.length === bytes.length && p.every((b, i) => b === bytes[i])) } };
}

test('the probes are well-formed modules: threads validates in Node; relaxed SIMD differs from plain SIMD only by its op', () => {
  assert.equal(WebAssembly.validate(THREADS_PROBE), true);
  const plain = Uint8Array.from(RELAXED_SIMD_PROBE); // i8x16.relaxed_swizzle (0xfd 0x80 0x02) -> i8x16.swizzle (0xfd 0x0e)
  const swizzle = Uint8Array.of(...plain.slice(0, 19), 10, 14, 1, 12, ...plain.slice(23, 33), 14, 11);
  assert.equal(WebAssembly.validate(swizzle), true); // the same module with the SIMD128 op is valid here
});

test('features: relaxed SIMD from the probe; threads need isolation, SharedArrayBuffer and shared wasm memory', () => {
  assert.deepEqual(wasmFeatures(env({ relaxed: true, shared: true })), { relaxedSimd: true, threads: true });
  assert.deepEqual(wasmFeatures(env({ relaxed: false, shared: true })), { relaxedSimd: false, threads: true });
  assert.equal(wasmFeatures(env({ relaxed: true, shared: true, isolated: false })).threads, false);
  assert.equal(wasmFeatures(env({ relaxed: true, shared: true, sab: false })).threads, false);
  assert.equal(wasmFeatures(env({ relaxed: true, shared: false })).threads, false);
  const throwing = { WebAssembly: { validate: () => { throw new Error('no'); } } };
  assert.deepEqual(wasmFeatures(throwing), { relaxedSimd: false, threads: false });
  assert.deepEqual(wasmFeatures({}), { relaxedSimd: false, threads: false }); // no WebAssembly at all
});

test('the page picks the fastest build the browser runs, compat when it lacks relaxed SIMD', () => {
  const all = { relaxedSimd: true, threads: true };
  assert.deepEqual(chooseBuild(ALL, all, 2), { build: 'threaded', threads: 2, reason: 'relaxed SIMD, threads' });
  assert.equal(chooseBuild(ALL, all, 1).build, 'default'); // one thread: no worker pool to start
  assert.deepEqual(chooseBuild(ALL, { relaxedSimd: true, threads: false }, 4),
    { build: 'default', threads: 1, reason: 'relaxed SIMD (no threads here)' });
  assert.deepEqual(chooseBuild(ALL, { relaxedSimd: false, threads: true }, 4),
    { build: 'compat', threads: 1, reason: 'no relaxed SIMD' }); // threaded needs relaxed SIMD too
  assert.equal(chooseBuild({ compat: 'c.js' }, all, 2).build, 'compat'); // only what the site vendors
  assert.equal(chooseBuild({ compat: 'c.js', threaded: 't.js' }, all, 1).build, 'compat');
});

test('?litert-build forces a vendored build; an unknown one, or nothing runnable, is an error naming the choices', () => {
  const none = { relaxedSimd: false, threads: false };
  assert.deepEqual(chooseBuild(ALL, none, 2, 'threaded'), { build: 'threaded', threads: 2, reason: 'query' });
  assert.deepEqual(chooseBuild(ALL, none, 2, 'default'), { build: 'default', threads: 1, reason: 'query' });
  assert.throws(() => chooseBuild(ALL, none, 1, 'jspi'), /jspi is not in this site; it has compat, default, threaded/);
  assert.throws(() => chooseBuild({ default: 'd.js' }, none, 1), /no LiteRT.js build this browser can run/);
});
