// node --test: the one resampling of an upload to the model's H x W (web_demo/ui/resample.js), on hand-computed
// cases; tests/test_page_js.py also compares it byte for byte with Pillow on real photos. Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import { centreCrop, convertRgba, modelImage, resize } from '../../web_demo/ui/resample.js';

const grey = (width, height, values) => ({ data: Uint8Array.from(values), width, height, channels: 1 });

test('grey conversion is Pillow\'s fixed-point ITU-R 601-2 luma; RGB drops alpha', () => {
  const rgba = Uint8Array.of(255, 0, 0, 255, 0, 255, 0, 0, 0, 0, 255, 9, 200, 200, 200, 255);
  assert.deepEqual([...convertRgba(rgba, 4, 1, 'L').data], [76, 150, 29, 200]); // (r*19595 + g*38470 + b*7471 + 32768) >> 16
  assert.deepEqual([...convertRgba(rgba, 2, 2, 'RGB').data], [255, 0, 0, 0, 255, 0, 0, 0, 255, 200, 200, 200]);
});

test('bilinear halving averages each pair of pixels (the filter widens with the downscale: antialiased)', () => {
  // 4 -> 2: output centres at 1 and 3, triangle of half-width 2 over pixels 0..3: weights 1/4 3/4 3/4 1/4 around each
  const out = resize(grey(4, 1, [0, 100, 200, 40]), 2, 1, 'bilinear');
  assert.deepEqual([...out.data], [Math.round((0 * 3 + 100 * 3 + 200 * 1) / 7), Math.round((100 + 200 * 3 + 40 * 3) / 7)]);
  assert.deepEqual([...resize(grey(4, 1, [0, 100, 200, 40]), 2, 1, 'area').data], [50, 120]); // box: plain means
  assert.deepEqual([...resize(grey(4, 1, [0, 100, 200, 40]), 2, 1, 'nearest').data], [100, 40]); // pixel at (i + .5) * 2
});

test('upscaling interpolates between neighbours; a same-size resize copies; the box crops', () => {
  assert.deepEqual([...resize(grey(2, 1, [0, 200]), 4, 1, 'bilinear').data], [0, 50, 150, 200]);
  const same = grey(2, 2, [1, 2, 3, 4]);
  assert.deepEqual([...resize(same, 2, 2, 'bilinear').data], [1, 2, 3, 4]);
  assert.deepEqual([...resize(grey(4, 1, [0, 100, 200, 40]), 2, 1, 'area', [2, 0, 4, 1]).data], [200, 40]);
  assert.throws(() => resize(same, 1, 1, 'bicubic'), /unknown resize method bicubic/);
});

test('the model image is converted, resized once and put in the model\'s channel order', () => {
  const rgba = Uint8Array.of(10, 20, 30, 255, 10, 20, 30, 255);
  const dims = { height: 1, width: 1, channels: 3 };
  assert.deepEqual([...modelImage(rgba, 2, 1, dims, { order: 'RGB', resize: 'bilinear' })], [10, 20, 30]);
  assert.deepEqual([...modelImage(rgba, 2, 1, dims, { order: 'BGR', resize: 'bilinear' })], [30, 20, 10]);
  assert.deepEqual([...modelImage(rgba, 2, 1, dims, { order: 'L', resize: 'nearest' })], [18, 18, 18]);
});

test('a camera frame is cropped to the centre with the model\'s aspect ratio', () => {
  assert.deepEqual(centreCrop(640, 480, 32, 32), [80, 0, 560, 480]);
  assert.deepEqual(centreCrop(100, 400, 10, 20), [0, 100, 100, 300]);
});
