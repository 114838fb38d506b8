// Pure pixel maths of the image input: the drawing pad's RGBA pixels -> the model's H x W x C grid in 0..1, and the
// input contract (pixels 0..255 <-> the model's values; channel order, mean/std or range).
// No DOM: tests/js/pixels.test.mjs runs it in Node.
import { RESIZE_METHODS } from './resample.js';

const INK = 25; // red channel above this counts as drawn (the pad is cleared to the background colour)
const MARGIN = 1.15; // the stroke box grown by 15%, as the digits data leaves a margin around each digit

export const luminance = (r, g, b) => (0.299 * r + 0.587 * g + 0.114 * b) / 255;

// Area-average the crop box [x0, y0, cw, ch] of RGBA pixels (width x height) into the H x W x C grid in 0..1.
export function pixelsToGrid(pixels, width, height, box, dims, invert = false) {
  const [x0, y0, cw, ch] = box;
  const { height: H, width: W, channels: C } = dims;
  const sums = new Float32Array(H * W * C);
  for (let y = Math.max(0, Math.floor(y0)); y < Math.min(height, y0 + ch); y++) {
    const gy = Math.floor(((y - y0) / ch) * H);
    if (gy < 0 || gy >= H) continue;
    for (let x = Math.max(0, Math.floor(x0)); x < Math.min(width, x0 + cw); x++) {
      const gx = Math.floor(((x - x0) / cw) * W);
      if (gx < 0 || gx >= W) continue;
      const i = (y * width + x) * 4;
      const base = (gy * W + gx) * C;
      if (C === 1) sums[base] += luminance(pixels[i], pixels[i + 1], pixels[i + 2]);
      else for (let c = 0; c < 3; c++) sums[base + c] += pixels[i + c] / 255;
    }
  }
  const area = (cw / W) * (ch / H);
  return Array.from(sums, (s) => {
    const v = Math.min(1, s / area);
    return invert ? 1 - v : v;
  });
}

// Bounding box of the strokes, grown to a centred square with a margin (as the digits data is size-normalised);
// null when nothing is drawn.
export function strokeBox(pixels, width, height) {
  let minX = width; let minY = height; let maxX = -1; let maxY = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (pixels[(y * width + x) * 4] > INK) {
        if (x < minX) minX = x; if (x > maxX) maxX = x;
        if (y < minY) minY = y; if (y > maxY) maxY = y;
      }
    }
  }
  if (maxX < 0) return null;
  const side = Math.max(maxX - minX + 1, maxY - minY + 1) * MARGIN;
  return [(minX + maxX + 1) / 2 - side / 2, (minY + maxY + 1) / 2 - side / 2, side, side];
}

// ---------- the input contract: pixels 0..255 <-> the model's values ----------

const ORDERS = { 1: ['L'], 3: ['RGB', 'BGR', 'L'] };

// The image input's contract from demo-config.json: {order, mean, std, resize}, mean/std one per model channel
// (in the model's channel order). With "mean"/"std" absent, "range": [lo, hi] (value = lo + p / 255 * (hi - lo)) is
// the same thing as mean = -lo * 255 / (hi - lo), std = 255 / (hi - lo). Error naming the field when it is unusable.
export function inputContract(inp) {
  const C = inp.channels;
  const order = inp.channelOrder || (C === 1 ? 'L' : 'RGB');
  if (!(ORDERS[C] || []).includes(order)) {
    throw new Error(`input ${inp.name}: channelOrder ${order} does not fit its ${C} channel(s)`);
  }
  const perChannel = (field, values) => {
    const list = Array.isArray(values) ? values.map(Number) : [Number(values)];
    if (!(list.length === 1 || list.length === C) || !list.every(Number.isFinite)) {
      throw new Error(`input ${inp.name}: ${field} must be 1 or ${C} numbers, got ${JSON.stringify(values)}`);
    }
    return Array.from({ length: C }, (_, c) => list[list.length === 1 ? 0 : c]);
  };
  let mean; let std;
  if (inp.mean !== undefined || inp.std !== undefined) {
    mean = perChannel('mean', inp.mean ?? 0);
    std = perChannel('std', inp.std ?? 1);
  } else {
    const [lo, hi] = inp.range || [0, 255];
    mean = perChannel('range', ((0 - lo) * 255) / (hi - lo));
    std = perChannel('range', 255 / (hi - lo));
  }
  if (std.some((s) => s === 0)) throw new Error(`input ${inp.name}: std must not be 0`);
  const resize = inp.resize || 'bilinear';
  if (!RESIZE_METHODS.includes(resize)) {
    throw new Error(`input ${inp.name}: resize ${resize} is not one of ${RESIZE_METHODS.join(', ')}`);
  }
  return { order, mean, std, resize };
}

// Pixels (H x W x C in the model's channel order, 0..255, may be fractional) -> model values (invert: 255 - p first).
export function pixelsToValues(pixels, contract, invert = false) {
  const { mean, std } = contract;
  const C = mean.length;
  const out = new Float32Array(pixels.length);
  for (let i = 0; i < pixels.length; i++) {
    const p = invert ? 255 - pixels[i] : pixels[i];
    out[i] = (p - mean[i % C]) / std[i % C];
  }
  return out;
}

// Model values -> pixels 0..255 (clamped): what the page shows for values given through the API.
export function valuesToPixels(values, contract) {
  const { mean, std } = contract;
  const C = mean.length;
  return Float32Array.from(values, (v, i) => Math.min(255, Math.max(0, Number(v) * std[i % C] + mean[i % C])));
}

// Pixels (model channel order) -> RGBA bytes to display (grey for one channel, BGR swapped back).
export function pixelsToRgba(pixels, dims, order = 'RGB') {
  const { height: H, width: W, channels: C } = dims;
  const rgba = new Uint8ClampedArray(H * W * 4);
  for (let p = 0; p < H * W; p++) {
    for (let c = 0; c < 3; c++) {
      const src = C === 1 ? 0 : (order === 'BGR' ? 2 - c : c);
      rgba[p * 4 + c] = Math.round(pixels[p * C + src]);
    }
    rgba[p * 4 + 3] = 255;
  }
  return rgba;
}
