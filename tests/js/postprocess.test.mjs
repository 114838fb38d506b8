// node --test: the page's pure post-processing (web_demo/postprocess.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  allFinite, argmaxLastAxis, headSummary, headTitle, independentProbabilities, isProbabilityRow, median, percent,
  sigmoid, splitRows, toProbabilities, topK, withRanking,
} from '../../web_demo/postprocess.js';

const close = (got, want, tol = 1e-12) => {
  assert.equal(got.length, want.length);
  got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= tol, `[${i}] ${v} vs ${want[i]}`));
};

test('a row in [0,1] summing to 1 is a probability row; logits, one value or a sum off by 1e-3 are not', () => {
  assert.ok(isProbabilityRow([0.2, 0.3, 0.5]));
  assert.ok(!isProbabilityRow([0.2, 0.3, 0.502]));
  assert.ok(isProbabilityRow([0.2, 0.3, 0.502], 0.05));
  assert.ok(!isProbabilityRow([1]));
  assert.ok(!isProbabilityRow([-0.5, 1.5]));
  assert.ok(!isProbabilityRow([2, 1, 0]));
});

test('softmax of logits matches the closed form and sums to 1; probabilities and a single value are kept', () => {
  const z = Math.exp(2) + Math.exp(1) + 1;
  close(toProbabilities([2, 1, 0]), [Math.exp(2) / z, Math.exp(1) / z, 1 / z]);
  close(toProbabilities([1000, 1000]), [0.5, 0.5]); // max subtracted: no overflow
  const probs = [0.1, 0.9];
  assert.equal(toProbabilities(probs), probs);
  assert.deepEqual(toProbabilities([3.5]), [3.5]);
  const int8 = [0.5, 0.49609375]; // int8 softmax: multiples of 1/256, sum 0.996
  assert.equal(toProbabilities(int8, 0.05), int8);
  assert.notEqual(toProbabilities(int8), int8);
});

test('top-k is sorted best first, cut to k, labelled, and falls back to the index without a label', () => {
  assert.deepEqual(topK([0.1, 0.6, 0.3], ['a', '<b>'], 2),
    [{ label: '<b>', probability: 0.6 }, { label: '2', probability: 0.3 }]);
  assert.deepEqual(topK([0.5, 0.5], [], 5).map((t) => t.label), ['0', '1']); // stable on ties
});

test('withRanking: batch 1 gives one row, a batch one row and one top-k per sample; raw outputs are kept', () => {
  const raw = { outputs: { probs: { shape: [2, 3], values: [0.7, 0.2, 0.1, 2, 1, 0] } }, ms: 1.5, backend: 'wasm',
    engine: 'tfjs' };
  const res = withRanking(raw, { name: 'probs', batch: 2, tolerance: 1e-3, labels: ['x', 'y', 'z'], k: 2 });
  assert.equal(res.probabilities.length, 2);
  close(res.probabilities[0], [0.7, 0.2, 0.1]);
  close(res.probabilities[1], toProbabilities([2, 1, 0]));
  assert.deepEqual(res.top.map((t) => t.map((e) => e.label)), [['x', 'y'], ['x', 'y']]);
  assert.equal(res.outputs, raw.outputs);
  assert.deepEqual([res.ms, res.backend, res.engine], [1.5, 'wasm', 'tfjs']);
  const one = withRanking({ ...raw, outputs: { probs: { shape: [1, 3], values: [0.1, 0.1, 0.8] } } },
    { name: 'probs', batch: 1, tolerance: 1e-3, labels: [], k: 1 });
  close(one.probabilities, [0.1, 0.1, 0.8]);
  assert.deepEqual(one.top, [{ label: '2', probability: 0.8 }]);
});

test('splitRows cuts batch-major values into plain rows', () => {
  assert.deepEqual(splitRows(Float32Array.from([1, 2, 3, 4, 5, 6]), 3), [[1, 2], [3, 4], [5, 6]]);
});

test('median takes the lower middle value and leaves its input alone', () => {
  const xs = [5, 1, 4, 2];
  assert.equal(median(xs), 2);
  assert.deepEqual(xs, [5, 1, 4, 2]);
  assert.equal(median([3, 1, 2]), 2);
});

test('head text: top-k of a probability row, else the first 16 values with a count', () => {
  assert.equal(headSummary([0.25, 0.7, 0.05], 2), '1: 70.0% \u00b7 0: 25.0%');
  assert.equal(headSummary([1.23456, -2], 3), '1.235, -2.000');
  const long = Array.from({ length: 20 }, (_, i) => i);
  assert.ok(headSummary(long, 3).endsWith('15.00 \u2026 (20 values)'));
  assert.equal(headTitle('box', [1, 4]), 'box [4]');
  assert.equal(headTitle('score', [1]), 'score [1]');
  assert.equal(percent(0.1234), '12.3%');
});

test('allFinite is false as soon as one value of one head is NaN or infinite', () => {
  assert.equal(allFinite({ a: { values: [0, 1.5] }, b: { values: new Float32Array([2]) } }), true);
  assert.equal(allFinite({ a: { values: [0, 1.5] }, b: { values: new Float32Array([NaN]) } }), false);
  assert.equal(allFinite({ a: { values: [Infinity] } }), false);
});

test('multi-label rows are independent probabilities: sigmoid outputs kept, logits through a sigmoid, never softmaxed', () => {
  const row = [0.97, 0.9, 0.1];
  assert.equal(independentProbabilities(row, 'sigmoid'), row);
  assert.equal(independentProbabilities(row, 'unknown'), row); // all in [0,1]: taken as probabilities
  close(independentProbabilities([2, -1], 'linear'), [sigmoid(2), sigmoid(-1)]);
  close(independentProbabilities([2, -1], 'unknown'), [1 / (1 + Math.exp(-2)), 1 / (1 + Math.exp(1))]);
  const raw = { outputs: { y: { shape: [1, 3], values: row } }, ms: 1, backend: 'wasm', engine: 'tfjs' };
  const ranked = withRanking(raw, { name: 'y', batch: 1, labels: ['a', 'b', 'c'], k: 2, task: 'multilabel',
    activation: 'sigmoid' });
  assert.deepEqual(ranked.probabilities, row); // 0.97 stays 0.97 (a softmax would make it 46 %)
  assert.deepEqual(ranked.top.map((t) => t.label), ['a', 'b', 'c']); // every label, best first
});

test('segmentation and regression results are not ranked; the mask is the arg-max of the last axis', () => {
  const raw = { outputs: { y: { shape: [1, 2, 1, 3], values: [0, 5, 1, 7, 7, 2] } }, ms: 1 };
  for (const task of ['segmentation', 'regression']) {
    const r = withRanking(raw, { name: 'y', batch: 1, labels: [], k: 3, task });
    assert.equal(r.probabilities, null);
    assert.deepEqual(r.top, []);
  }
  assert.deepEqual(Array.from(argmaxLastAxis([0, 5, 1, 7, 7, 2], 3)), [1, 0]); // ties: the first index, as numpy
  const cls = withRanking({ outputs: { y: { shape: [1, 2], values: [2, 0] } } }, { name: 'y', batch: 1, labels: [], k: 1 });
  close(cls.probabilities, toProbabilities([2, 0])); // no task: classification, as before
});
