// node --test: the page config and the feeds predict() accepts (web_demo/config.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  checkFeeds, defaultShape, describe, imageInputOf, inputStyle, modelInfoText, pageOptions, toFeeds, zeroFeeds,
} from '../../web_demo/config.js';

const image = { name: 'image', kind: 'image', dtype: 'float32', shape: [null, 8, 8, 1] };
const counts = { name: 'counts', kind: 'vector', dtype: 'int32', shape: [null, 3] };

test('old configs with one input/output get inputs/outputs; the image input is the first image-like one', () => {
  const config = describe({ input: counts, output: { name: 'p', shape: [null, 2] } });
  assert.deepEqual(config.inputs, [counts]);
  assert.equal(config.outputs[0].name, 'p');
  assert.equal(imageInputOf(config), null);
  assert.equal(imageInputOf(describe({ inputs: [counts, image], outputs: [] })), image);
});

test('URL options: threads must be a positive integer', () => {
  assert.deepEqual({ ...pageOptions('?backend=cpu&threads=3&engine=litert&litert-build=compat') },
    { backend: 'cpu', engine: 'litert', threads: 3, litertBuild: 'compat' });
  assert.equal(pageOptions('?engine=litert').litertBuild, null);
  for (const bad of ['?threads=0', '?threads=-2', '?threads=x', '']) assert.equal(pageOptions(bad).threads, null);
});

test('default shapes: batch and open dimensions are 1 unless the site chose a feed shape', () => {
  assert.deepEqual(defaultShape(image), [1, 8, 8, 1]);
  assert.deepEqual(defaultShape({ shape: [null, null, null, 3], feedShape: [1, 16, 16, 3] }), [1, 16, 16, 3]);
  const zeros = zeroFeeds([image, counts]);
  assert.equal(zeros.image.values.length, 64);
  assert.deepEqual(zeros.counts.shape, [1, 3]);
});

test('toFeeds: plain values for one-input models, an object naming every input otherwise', () => {
  assert.deepEqual(toFeeds([image], new Array(64).fill(0)).image.shape, [1, 8, 8, 1]);
  assert.deepEqual(toFeeds([image], new Array(128).fill(0), [2, 8, 8, 1]).image.shape, [2, 8, 8, 1]);
  assert.throws(() => toFeeds([image, counts], [1, 2, 3]), /2 inputs \(image, counts\)/);
  assert.throws(() => toFeeds([image], { imag: [] }), /unknown input\(s\) imag; the model takes image/);
  assert.throws(() => toFeeds([image, counts], { image: [] }), /no values for input counts/);
  assert.throws(() => toFeeds([image], 'text'), /expected values or \{inputName: values\}/);
  const feeds = toFeeds([image, counts], { image: { values: [0], shape: [1, 1, 1, 1] }, counts: [1, 2, 3] });
  assert.deepEqual(feeds.counts, { values: [1, 2, 3], shape: [1, 3] });
  assert.deepEqual(feeds.image.shape, [1, 1, 1, 1]);
});

test('checkFeeds: sizes must match shapes and inputs must agree on the batch', () => {
  assert.equal(checkFeeds([counts], { counts: { values: [1, 2, 3, 4, 5, 6], shape: [2, 3] } }), 2);
  assert.throws(() => checkFeeds([counts], { counts: { values: [1, 2], shape: [1, 3] } }),
    /counts shape \[1,3\] needs 3 values, got 2/);
  assert.throws(() => checkFeeds([image, counts], {
    image: { values: new Array(64).fill(0), shape: [1, 8, 8, 1] }, counts: { values: new Array(6), shape: [2, 3] },
  }), /disagree on the batch \(1 vs 2\)/);
});

test('the footer names every input and head with open dimensions as ?, and the engine running', () => {
  const config = describe({ inputs: [image], outputs: [{ name: 'probs', shape: [null, 10] }] });
  assert.equal(modelInfoText(config, 'LiteRT.js int8 (@litertjs/core 2.5.3, default wasm build)'),
    'image float32[?,8,8,1] \u2192 probs[?,10] \u00b7 LiteRT.js int8 (@litertjs/core 2.5.3, default wasm build)');
});

test('photo-like image inputs (colour from 24 px, grey from 64 px) get upload/camera, small ones the pad', () => {
  const style = (height, width, channels) => inputStyle({ height, width, channels });
  assert.equal(style(8, 8, 1), 'draw'); // sklearn digits
  assert.equal(style(28, 28, 1), 'draw'); // MNIST
  assert.equal(style(16, 16, 3), 'draw'); // a tiny colour input: still drawable
  assert.equal(style(24, 32, 3), 'photo');
  assert.equal(style(32, 32, 3), 'photo'); // CIFAR
  assert.equal(style(224, 224, 3), 'photo');
  assert.equal(style(63, 200, 1), 'draw');
  assert.equal(style(96, 96, 1), 'photo'); // a grey scan or face crop
});
