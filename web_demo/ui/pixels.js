// Pure pixel maths of the drawing pad: RGBA pixels <-> the model's H x W x C grid in 0..1 <-> input values.
// No DOM: tests/js/pixels.test.mjs runs it in Node.

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

// Grid (0..1) -> the model's input range [lo, hi], and back (clamped to 0..1).
export const gridToValues = (grid, [lo, hi]) => grid.map((v) => lo + v * (hi - lo));
export const valuesToGrid = (values, [lo, hi]) => Array.from(values, (v) => Math.min(1, Math.max(0, (v - lo) / (hi - lo))));

// Grid -> RGBA bytes of an H x W image (grey when C is 1).
export function gridToRgba(grid, dims) {
  const { height: H, width: W, channels: C } = dims;
  const rgba = new Uint8ClampedArray(H * W * 4);
  for (let p = 0; p < H * W; p++) {
    for (let c = 0; c < 3; c++) rgba[p * 4 + c] = Math.round(255 * grid[p * C + (C === 1 ? 0 : c)]);
    rgba[p * 4 + 3] = 255;
  }
  return rgba;
}
