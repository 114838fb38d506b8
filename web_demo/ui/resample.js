// Decoded image -> the model's H x W, once, exactly as the Python image readers (calibration, eval: Pillow's
// Image.convert + Image.resize) do it, so an upload in the page feeds the model what `edgetool eval` feeds it.
// Pure (no DOM): tests/js/resample.test.mjs pins it, and tests/test_page_js.py compares it byte for byte with Pillow.
//
//   convert   RGBA -> 'L' (Pillow's ITU-R 601-2 luma in 16-bit fixed point) or 'RGB' (alpha dropped)
//   resize    'bilinear' = Pillow BILINEAR (a triangle filter widened by the downscale factor, i.e. antialiased),
//             'area' = Pillow BOX, 'nearest' = Pillow NEAREST; two passes (horizontal, then vertical), each rounded
//             to 8 bits with Pillow's 22-bit fixed-point coefficients
//
// An image is {data: Uint8Array (interleaved, row-major), width, height, channels}.

const PRECISION_BITS = 32 - 8 - 2; // Pillow's Resample.c
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);

const FILTERS = {
  bilinear: { support: 1, weight: (x) => { const a = Math.abs(x); return a < 1 ? 1 - a : 0; } },
  area: { support: 0.5, weight: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
};
export const RESIZE_METHODS = Object.freeze(['bilinear', 'area', 'nearest']);

// RGBA bytes (canvas getImageData order) -> an 'L' (1 channel) or 'RGB' (3 channels) image, as Pillow converts.
export function convertRgba(rgba, width, height, mode) {
  const n = width * height;
  if (mode === 'L') {
    const data = new Uint8Array(n);
    for (let p = 0; p < n; p++) {
      const i = p * 4;
      // Pillow's L24: (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16
      data[p] = (rgba[i] * 19595 + rgba[i + 1] * 38470 + rgba[i + 2] * 7471 + 0x8000) >>> 16;
    }
    return { data, width, height, channels: 1 };
  }
  if (mode !== 'RGB') throw new Error(`unknown image mode ${mode} (expected L or RGB)`);
  const data = new Uint8Array(n * 3);
  for (let p = 0; p < n; p++) for (let c = 0; c < 3; c++) data[p * 3 + c] = rgba[p * 4 + c];
  return { data, width, height, channels: 3 };
}

// Pillow's precompute_coeffs + normalize_coeffs_8bpc: for each output index, the first input index and the
// fixed-point weights of the input pixels it reads. in0/in1: the source span (Pillow keeps them as float32).
function coefficients(inSize, in0, in1, outSize, filter) {
  const scale = (Math.fround(in1) - Math.fround(in0)) / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const ss = 1 / filterScale; // (Pillow multiplies by the reciprocal: the same rounding)
  const taps = [];
  for (let xx = 0; xx < outSize; xx++) {
    const center = Math.fround(in0) + (xx + 0.5) * scale;
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    const w = [];
    let sum = 0;
    for (let x = 0; x < xmax; x++) {
      const v = filter.weight((x + xmin - center + 0.5) * ss);
      w.push(v);
      sum += v;
    }
    const fixed = w.map((v) => {
      const k = sum !== 0 ? v / sum : v;
      return k < 0 ? Math.trunc(-0.5 + k * ONE) : Math.trunc(0.5 + k * ONE);
    });
    taps.push({ start: xmin, weights: fixed });
  }
  return taps;
}

const clip8 = (ss) => Math.min(255, Math.max(0, Math.floor(ss / ONE)));

// One separable pass along x (horizontal) or y; rows/cols outside [first, first + count) of the source are unused.
function pass(img, taps, horizontal) {
  const { data, width, height, channels: C } = img;
  const outW = horizontal ? taps.length : width;
  const outH = horizontal ? height : taps.length;
  const out = new Uint8Array(outW * outH * C);
  for (let y = 0; y < outH; y++) {
    for (let x = 0; x < outW; x++) {
      const { start, weights } = taps[horizontal ? x : y];
      for (let c = 0; c < C; c++) {
        let ss = HALF;
        for (let k = 0; k < weights.length; k++) {
          const src = horizontal ? (y * width + start + k) : ((start + k) * width + x);
          ss += data[src * C + c] * weights[k];
        }
        out[(y * outW + x) * C + c] = clip8(ss);
      }
    }
  }
  return { data: out, width: outW, height: outH, channels: C };
}

// Pillow's NEAREST resize (ImagingScaleAffine): source index COORD(a * (i + 0.5) + in0), accumulated as Pillow does.
function nearestIndex(inSize, in0, in1, outSize) {
  const a = (Math.fround(in1) - Math.fround(in0)) / outSize;
  const index = new Int32Array(outSize);
  let pos = Math.fround(in0) + a * 0.5;
  for (let i = 0; i < outSize; i++) {
    index[i] = Math.min(inSize - 1, pos < 0 ? 0 : Math.trunc(pos));
    pos += a;
  }
  return index;
}

function nearest(img, outW, outH, box) {
  const { data, width, height, channels: C } = img;
  const xs = nearestIndex(width, box[0], box[2], outW);
  const ys = nearestIndex(height, box[1], box[3], outH);
  const out = new Uint8Array(outW * outH * C);
  for (let y = 0; y < outH; y++) {
    for (let x = 0; x < outW; x++) {
      const src = (ys[y] * width + xs[x]) * C;
      for (let c = 0; c < C; c++) out[(y * outW + x) * C + c] = data[src + c];
    }
  }
  return { data: out, width: outW, height: outH, channels: C };
}

function crop(img, x0, y0, w, h) {
  const { data, width, channels: C } = img;
  const out = new Uint8Array(w * h * C);
  for (let y = 0; y < h; y++) out.set(data.subarray(((y0 + y) * width + x0) * C, ((y0 + y) * width + x0 + w) * C), y * w * C);
  return { data: out, width: w, height: h, channels: C };
}

// img resized to outW x outH with `method`; box [x0, y0, x1, y1]: the source region (default: all of it), as
// Pillow's Image.resize(size, method, box).
export function resize(img, outW, outH, method = 'bilinear', box = null) {
  if (!RESIZE_METHODS.includes(method)) {
    throw new Error(`unknown resize method ${method} (expected one of ${RESIZE_METHODS.join(', ')})`);
  }
  const span = box || [0, 0, img.width, img.height];
  const [x0, y0] = span;
  if (Number.isInteger(x0) && Number.isInteger(y0) && span[2] - x0 === outW && span[3] - y0 === outH) {
    return crop(img, x0, y0, outW, outH); // (Pillow: a whole-pixel box of the output's size is a crop)
  }
  if (method === 'nearest') return nearest(img, outW, outH, span);
  const filter = FILTERS[method];
  const horizontal = (im) => pass(im, coefficients(img.width, span[0], span[2], outW, filter), true);
  const vertical = (im) => pass(im, coefficients(img.height, span[1], span[3], outH, filter), false);
  const passes = [];
  if (outW !== img.width || span[0] !== 0 || span[2] !== outW) passes.push(horizontal);
  if (outH !== img.height || span[1] !== 0 || span[3] !== outH) passes.push(vertical);
  // Pillow 13 runs the vertical pass first when the height shrinks by more than twice as many pixels as the width
  // (earlier Pillows always start horizontally: tall images may then differ by one level in a few pixels)
  if (img.height - outH > 0 && img.height - outH > (img.width - outW) * 2) passes.reverse();
  let out = img;
  for (const run of passes) out = run(out);
  return out;
}

// The centred region of a width x height frame with the aspect ratio of outW x outH ([x0, y0, x1, y1]).
export function centreCrop(width, height, outW, outH) {
  const scale = Math.min(width / outW, height / outH);
  const w = outW * scale; const h = outH * scale;
  return [(width - w) / 2, (height - h) / 2, (width + w) / 2, (height + h) / 2];
}

// RGBA bytes of a decoded image (width x height) -> the model's H x W x C pixels (uint8) in its channel order:
// converted ('L' for a grey contract, else 'RGB'), resized once with the contract's method from `box` (default: the
// whole image, stretched to H x W as the Python readers do), then BGR-swapped or grey-replicated as the model wants.
export function modelImage(rgba, width, height, dims, contract, box = null) {
  const { height: H, width: W, channels: C } = dims;
  const grey = contract.order === 'L';
  const small = resize(convertRgba(rgba, width, height, grey ? 'L' : 'RGB'), W, H, contract.resize, box).data;
  if (grey && C === 1) return small;
  const out = new Uint8Array(H * W * C);
  for (let p = 0; p < H * W; p++) {
    for (let c = 0; c < C; c++) {
      out[p * C + c] = grey ? small[p] : small[p * 3 + (contract.order === 'BGR' ? 2 - c : c)];
    }
  }
  return out;
}
