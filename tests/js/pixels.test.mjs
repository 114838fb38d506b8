// node --test: the drawing pad's pixel maths (web_demo/ui/pixels.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import { gridToRgba, gridToValues, pixelsToGrid, strokeBox, valuesToGrid } from '../../web_demo/ui/pixels.js';

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

test('grid values map to the input range and back, clamped', () => {
  assert.deepEqual(gridToValues([0, 0.5, 1], [0, 16]), [0, 8, 16]);
  assert.deepEqual(valuesToGrid([-8, 0, 8, 32], [0, 16]), [0, 0, 0.5, 1]);
  assert.deepEqual([...gridToRgba([0, 1], { height: 1, width: 2, channels: 1 })], [0, 0, 0, 255, 255, 255, 255, 255]);
});
