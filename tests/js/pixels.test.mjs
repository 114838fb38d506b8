// node --test: the drawing pad's pixel maths (web_demo/ui/pixels.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  inputContract, pixelsToGrid, pixelsToRgba, pixelsToValues, strokeBox, valuesToPixels,
} from '../../web_demo/ui/pixels.js';

// width x height RGBA pixels, black, with the listed [x, y, grey] pixels set.
function canvas(width, height, lit = []) {
  const px = new Uint8ClampedArray(width * height * 4);
  for (let i = 3; i < px.length; i += 4) px[i] = 255;
  for (const [x, y, v] of lit) px.fill(v, (y * width + x) * 4, (y * width + x) * 4 + 3);
  return px;
}

test('a full-pad crop area-averages each block of pixels into one grid cell', () => {
  const px = canvas(4, 4, [[0, 0, 255], [1, 0, 255], [3, 3, 255]]); // 2x2 grid: cell (0,0) half lit, (1,1) a quarter
  const grid = pixelsToGrid(px, 4, 4, [0, 0, 4, 4], { height: 2, width: 2, channels: 1 });
  assert.deepEqual(grid, [0.5, 0, 0, 0.25]);
  const inverted = pixelsToGrid(px, 4, 4, [0, 0, 4, 4], { height: 2, width: 2, channels: 1 }, true);
  assert.deepEqual(inverted, [0.5, 1, 1, 0.75]);
});

test('colour grids keep the channels; grey uses luminance weights', () => {
  const px = canvas(1, 1);
  px.set([255, 0, 0, 255]);
  assert.deepEqual(pixelsToGrid(px, 1, 1, [0, 0, 1, 1], { height: 1, width: 1, channels: 3 }), [1, 0, 0]);
  const [grey] = pixelsToGrid(px, 1, 1, [0, 0, 1, 1], { height: 1, width: 1, channels: 1 });
  assert.ok(Math.abs(grey - 0.299) < 1e-6, grey);
});

test('the stroke box is a centred square 15% larger than the strokes; nothing drawn is null', () => {
  assert.equal(strokeBox(canvas(10, 10), 10, 10), null);
  const [x, y, w, h] = strokeBox(canvas(10, 10, [[2, 1, 255], [2, 4, 255]]), 10, 10); // 1 wide, 4 tall
  assert.equal(w, h);
  assert.ok(Math.abs(w - 4.6) < 1e-9);
  assert.ok(Math.abs(x + w / 2 - 2.5) < 1e-9 && Math.abs(y + h / 2 - 3) < 1e-9);
});

const close = (got, want, tol = 1e-6) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol, `[${i}] ${g} vs ${want[i]}`));
};

test('without mean/std the range [lo, hi] maps pixels 0..255 linearly (value = lo + p / 255 * (hi - lo))', () => {
  const grey = inputContract({ name: 'x', channels: 1, range: [0, 16] });
  assert.deepEqual(grey, { order: 'L', mean: [0], std: [255 / 16], resize: 'bilinear' });
  close(pixelsToValues([0, 127.5, 255], grey), [0, 8, 16]);
  close(pixelsToValues([0, 255], grey, true), [16, 0]); // inverted: 255 - p first
  const signed = inputContract({ name: 'x', channels: 3, range: [-1, 1] });
  close(pixelsToValues([0, 127.5, 255], signed), [-1, 0, 1]);
  close(valuesToPixels([-2, -1, 0, 1, 2], signed), [0, 0, 127.5, 255, 255]); // back, clamped
  assert.equal(inputContract({ name: 'x', channels: 3 }).std[0], 1); // no range at all: raw 0..255 pixels
});

test('mean/std are per model channel, in the model\'s channel order; one number applies to every channel', () => {
  const imagenet = inputContract({ name: 'x', channels: 3, mean: [123.675, 116.28, 103.53], std: [58.395, 57.12, 57.375],
    channelOrder: 'RGB', resize: 'area' });
  assert.equal(imagenet.resize, 'area');
  close(pixelsToValues([123.675, 116.28, 103.53, 255, 0, 0], imagenet),
    [0, 0, 0, (255 - 123.675) / 58.395, -116.28 / 57.12, -103.53 / 57.375]);
  const caffe = inputContract({ name: 'x', channels: 3, mean: [103.939, 116.779, 123.68], std: 1, channelOrder: 'BGR' });
  assert.deepEqual(caffe.std, [1, 1, 1]);
  close(pixelsToValues([103.939, 0, 123.68], caffe), [0, -116.779, 0]);
  close(valuesToPixels(pixelsToValues([10, 20, 30], caffe), caffe), [10, 20, 30], 1e-4);
  assert.throws(() => inputContract({ name: 'x', channels: 1, channelOrder: 'RGB' }), /channelOrder RGB .* 1 channel/);
  assert.throws(() => inputContract({ name: 'x', channels: 3, mean: [1, 2], std: 1 }), /mean must be 1 or 3 numbers/);
  assert.throws(() => inputContract({ name: 'x', channels: 1, mean: 0, std: 0 }), /std must not be 0/);
  assert.throws(() => inputContract({ name: 'x', channels: 1, resize: 'lanczos' }), /resize lanczos is not one of/);
});

test('the preview shows the model\'s pixels as RGB (grey replicated, BGR swapped back)', () => {
  assert.deepEqual([...pixelsToRgba([0, 255], { height: 1, width: 2, channels: 1 })], [0, 0, 0, 255, 255, 255, 255, 255]);
  assert.deepEqual([...pixelsToRgba([1, 2, 3], { height: 1, width: 1, channels: 3 }, 'BGR')], [3, 2, 1, 255]);
});
