// node --test: the remembered auto-pick (web_demo/engines/pick-cache.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import test from 'node:test';

import { choiceKey, modelHash, readChoice, writeChoice } from '../../web_demo/engines/pick-cache.js';

class FakeStorage {
  constructor() { this.items = new Map(); }
  getItem(k) { return this.items.has(k) ? this.items.get(k) : null; }
  setItem(k, v) { this.items.set(k, String(v)); }
}

const artifacts = (weights) => ({ modelTopology: { node: [{ op: 'Relu' }] }, weightSpecs: [{ name: 'w' }],
  weightData: weights });

test('the model hash is SHA-256 over the graph, the weight manifest and each weight buffer\'s digest', async () => {
  const w = Float32Array.from([1, 2, 3]).buffer;
  const sha = (b) => createHash('sha256').update(b).digest();
  const head = Buffer.from(JSON.stringify([{ node: [{ op: 'Relu' }] }, [{ name: 'w' }]]));
  const want = sha(Buffer.concat([head, sha(Buffer.from(w))])).toString('hex');
  assert.equal(await modelHash(artifacts(w)), want);
  assert.equal(await modelHash(artifacts([w])), want); // one buffer or a list of them
  assert.notEqual(await modelHash(artifacts(Float32Array.from([1, 2, 4]).buffer)), want); // other weights
  assert.equal(await modelHash(artifacts(w), null), null); // no Web Crypto: nothing remembered
});

test('a remembered choice is read back only for the same key and while its backend still works', () => {
  const storage = new FakeStorage();
  const key = choiceKey('abc', 'UA 1', 1);
  assert.equal(readChoice(storage, key, ['wasm']), null);
  const choice = { backend: 'wasm', bench: { wasm: 1.25, webgl: 3 }, skipped: { cpu: 'not benchmarked' } };
  writeChoice(storage, key, choice);
  assert.deepEqual(readChoice(storage, key, ['wasm', 'cpu']), { ...choice, engine: null, engineBench: {} });
  assert.equal(readChoice(storage, key, ['cpu']), null); // wasm does not start here any more
  assert.equal(readChoice(storage, choiceKey('abc', 'UA 2', 1), ['wasm']), null); // another browser
  assert.equal(readChoice(storage, choiceKey('abc', 'UA 1', 2), ['wasm']), null); // other thread count
  assert.equal(readChoice(storage, choiceKey('abd', 'UA 1', 1), ['wasm']), null); // another model
  assert.equal(readChoice(storage, choiceKey('abc', 'UA 1', 1, 'nvidia/ampere'), ['wasm']), null); // a GPU now
  storage.setItem(choiceKey('abc', 'UA 1', 1, 'google/swiftshader'), storage.getItem(key));
  assert.notEqual(readChoice(storage, choiceKey('abc', 'UA 1', 1, 'google/swiftshader'), ['wasm']), null);
  assert.equal(readChoice(storage, choiceKey('abc', 'UA 1', 1, 'apple/metal-3'), ['wasm']), null); // another GPU
});

test('the engine pick (--litert sites) is remembered with its times; one without a finite time is no engine pick', () => {
  const storage = new FakeStorage();
  const choice = { backend: 'wasm', bench: { wasm: 30 }, skipped: {}, engine: 'litert-fp32',
    engineBench: { tfjs: 31, litert: 16, 'litert-fp32': 14 } };
  writeChoice(storage, 'k', choice);
  assert.deepEqual(readChoice(storage, 'k', ['wasm']), choice);
  writeChoice(storage, 'k', { ...choice, engineBench: { tfjs: 31 } }); // no time for the chosen engine
  assert.deepEqual(readChoice(storage, 'k', ['wasm']), { ...choice, engine: null, engineBench: { tfjs: 31 } });
  writeChoice(storage, 'k', { ...choice, engine: 42 });
  assert.equal(readChoice(storage, 'k', ['wasm']).engine, null);
});

test('unreadable entries and failing storage are no choice, never an error', () => {
  const storage = new FakeStorage();
  storage.setItem('k', '{not json');
  assert.equal(readChoice(storage, 'k', ['wasm']), null);
  storage.setItem('k', JSON.stringify({ backend: 'wasm', bench: {} }));
  assert.equal(readChoice(storage, 'k', ['wasm']), null); // no time for the chosen backend
  const broken = { getItem() { throw new Error('denied'); }, setItem() { throw new Error('quota'); } };
  assert.equal(readChoice(broken, 'k', ['wasm']), null);
  const warn = console.warn;
  console.warn = () => {};
  try { writeChoice(broken, 'k', { backend: 'wasm' }); } finally { console.warn = warn; }
});

test('a site without a backend choice (LiteRT.js only) remembers the engine alone', () => {
  const storage = new FakeStorage();
  const key = choiceKey('sha-a+sha-b', 'UA 1', null);
  writeChoice(storage, key, { engine: 'litert-fp32', engineBench: { litert: 0.7, 'litert-fp32': 0.1 } });
  assert.deepEqual(readChoice(storage, key, null),
    { backend: null, bench: {}, skipped: {}, engine: 'litert-fp32', engineBench: { litert: 0.7, 'litert-fp32': 0.1 } });
  writeChoice(storage, key, { backend: 'wasm', bench: { wasm: 1 } }); // no engine: nothing to reuse
  assert.equal(readChoice(storage, key, null), null);
});
