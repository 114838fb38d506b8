// The image input: a drawing pad (small grey inputs: digits, sketches), image upload, camera, and a preview of exactly
// what the model sees. An upload or a camera frame is decoded at its own size and resampled once, straight to the
// model's H x W with the input contract's method (ui/resample.js: as the Python readers do), then turned into model
// values by the contract (ui/pixels.js); the pad only displays it. Nothing read back from a canvas feeds an image.
import { defaultShape, inputStyle, sizeOf } from '../config.js';
import { setupCamera } from './camera.js';
import { $, setStatus } from './dom.js';
import { inputContract, pixelsToGrid, pixelsToRgba, pixelsToValues, strokeBox, valuesToPixels } from './pixels.js';
import { centreCrop, modelImage } from './resample.js';

const PAD_PIXELS = 256; // the pad is the model's H x W scaled up to about this many pixels on its long side
const MAX_PIXELS = 100_000_000; // larger images are refused, as the Python image readers refuse them
export const PROMPTS = { draw: 'Draw something to get a prediction.', photo: 'Upload an image (or use the camera).' };

// RGBA bytes of a decoded image or video frame at its own size (no scaling: nothing is resampled here).
function decodedPixels(source, width, height) {
  const canvas = new OffscreenCanvas(width, height);
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  ctx.drawImage(source, 0, 0);
  return ctx.getImageData(0, 0, width, height).data;
}

// imageInput: the config's image input; draw: the config's colours and stroke width.
// onInput(): something new to predict; onClear(): the pad was cleared.
export function createPad(imageInput, draw, { onInput, onClear }) {
  const { height: H, width: W, channels: C } = imageInput;
  const contract = inputContract(imageInput);
  const style = inputStyle(imageInput);
  const pad = $('pad');
  const ctx = pad.getContext('2d');
  // source: 'draw' (strokes on the pad, cropped to their box) or 'image'; image: the current image as the model's
  // pixels (upload, camera: {pixels}) or values (given through the API: {values}).
  const state = { source: 'draw', image: null, drawing: false, queued: false };

  function clear() {
    ctx.fillStyle = draw.background;
    ctx.fillRect(0, 0, pad.width, pad.height);
  }

  function drawPreview(pixels) {
    const preview = $('preview').getContext('2d');
    const image = preview.createImageData(W, H);
    image.data.set(pixelsToRgba(pixels, imageInput, contract.order));
    preview.putImageData(image, 0, 0);
  }

  // Show a picture on the pad (display only, never read back): fitted whole, centred.
  function display(source, sw, sh, smooth) {
    const scale = Math.min(pad.width / sw, pad.height / sh);
    clear();
    ctx.imageSmoothingEnabled = smooth;
    ctx.drawImage(source, (pad.width - sw * scale) / 2, (pad.height - sh * scale) / 2, sw * scale, sh * scale);
  }

  function placeholder() {
    ctx.fillStyle = '#94a3b8';
    ctx.font = `${Math.round(pad.width / 16)}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.fillText('No image yet', pad.width / 2, pad.height / 2);
  }

  // A decoded image (crop: the camera's centred crop to the model's aspect) -> the model's pixels, shown and predicted.
  function useImage(source, sw, sh, crop) {
    if (sw * sh > MAX_PIXELS) throw new Error(`${sw}x${sh} is over the limit of ${MAX_PIXELS.toLocaleString()} pixels`);
    const box = crop ? centreCrop(sw, sh, W, H) : null;
    state.image = { pixels: modelImage(decodedPixels(source, sw, sh), sw, sh, imageInput, contract, box) };
    state.source = 'image';
    display(source, sw, sh, true);
    onInput();
  }

  const inverted = () => style === 'draw' && $('invert').checked;

  // The current input as {inputName: {values, shape}} (and on the preview); null when nothing is there.
  function read() {
    const feed = (values) => ({ [imageInput.name]: { values, shape: defaultShape(imageInput) } });
    if (state.source === 'image') {
      const { pixels, values } = state.image;
      if (values) { drawPreview(valuesToPixels(values, contract)); return feed(values); }
      const shown = inverted() ? pixels.map((p) => 255 - p) : pixels;
      drawPreview(shown);
      return feed(pixelsToValues(shown, contract));
    }
    const rgba = ctx.getImageData(0, 0, pad.width, pad.height).data;
    const box = strokeBox(rgba, pad.width, pad.height);
    if (!box) return null;
    const grey = contract.order === 'L';
    const grid = pixelsToGrid(rgba, pad.width, pad.height, box, { height: H, width: W, channels: grey ? 1 : 3 },
      inverted());
    const pixels = new Float32Array(H * W * C);
    for (let i = 0; i < pixels.length; i++) {
      const p = Math.floor(i / C); const c = i % C;
      pixels[i] = 255 * (grey ? grid[p] : grid[p * 3 + (contract.order === 'BGR' ? 2 - c : c)]);
    }
    drawPreview(pixels);
    return feed(pixelsToValues(pixels, contract));
  }

  // Show a single image given through the API on the pad and the preview, so the page shows what was classified.
  function show(feeds) {
    const given = feeds[imageInput.name];
    if (!given || given.shape[0] !== 1 || sizeOf(given.shape) !== H * W * C) return;
    state.image = { values: Float32Array.from(given.values, Number) };
    state.source = 'image';
    drawPreview(valuesToPixels(state.image.values, contract));
    display($('preview'), W, H, false);
  }

  const point = (ev) => {
    const r = pad.getBoundingClientRect();
    return [((ev.clientX - r.left) / r.width) * pad.width, ((ev.clientY - r.top) / r.height) * pad.height];
  };
  const schedule = () => {
    if (state.queued) return;
    state.queued = true;
    requestAnimationFrame(() => { state.queued = false; onInput(); });
  };

  function startStroke(ev) {
    if (state.source !== 'draw') { clear(); state.source = 'draw'; state.image = null; }
    state.drawing = true;
    pad.setPointerCapture(ev.pointerId);
    ctx.strokeStyle = draw.foreground;
    ctx.fillStyle = draw.foreground;
    ctx.lineWidth = pad.width * draw.strokeFraction;
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    const [x, y] = point(ev);
    ctx.beginPath();
    ctx.arc(x, y, ctx.lineWidth / 2, 0, 2 * Math.PI);
    ctx.fill();
    ctx.beginPath();
    ctx.moveTo(x, y);
    schedule();
  }

  function listenForStrokes() {
    pad.addEventListener('pointerdown', startStroke);
    pad.addEventListener('pointermove', (ev) => {
      if (!state.drawing) return;
      const [x, y] = point(ev);
      ctx.lineTo(x, y);
      ctx.stroke();
      schedule();
    });
    const stop = () => { if (state.drawing) { state.drawing = false; schedule(); } };
    pad.addEventListener('pointerup', stop);
    pad.addEventListener('pointercancel', stop);
    $('clear').addEventListener('click', () => {
      clear();
      state.source = 'draw';
      state.image = null;
      drawPreview(new Uint8Array(H * W * C));
      onClear();
    });
    $('invert').addEventListener('change', () => onInput());
  }

  function listen() {
    if (style === 'draw') listenForStrokes();
    $('file').addEventListener('change', async () => {
      const file = $('file').files[0];
      if (!file) return;
      try {
        // the file's own pixels: no colour-profile conversion, no premultiplied alpha (as Pillow reads them)
        const bitmap = await createImageBitmap(file, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
        useImage(bitmap, bitmap.width, bitmap.height, false);
      } catch (err) {
        setStatus(`Could not read ${file.name}: ${err.message}`, true);
      }
    });
    setupCamera((video, vw, vh) => useImage(video, vw, vh, true));
  }

  // A photo-like input (inputStyle): upload and camera only, no drawing, no colour inversion.
  function layout() {
    $('image-input').hidden = false;
    $('image-input').dataset.style = style;
    const photo = style === 'photo';
    $('draw-hint').textContent = photo
      ? 'Upload a photo or use the camera: it is resized once to the model\u2019s input, shown below.'
      : 'Draw with the mouse or a finger; the prediction updates as you draw.';
    $('clear').hidden = photo;
    $('invert').closest('label').hidden = photo;
    pad.setAttribute('aria-label', photo ? 'the uploaded image' : 'drawing canvas');
  }

  layout();
  const k = Math.max(1, Math.ceil(PAD_PIXELS / Math.max(H, W)));
  pad.width = W * k;
  pad.height = H * k;
  $('preview').width = W;
  $('preview').height = H;
  $('preview-label').textContent = `What the model sees (${W}\u00d7${H}, `
    + `${style === 'photo' ? '' : 'uploads: '}${contract.resize} resize)`; // (a drawing is area-averaged)
  clear();
  if (style === 'photo') placeholder();
  listen();
  return { read, show, style };
}
