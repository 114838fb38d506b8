// The image input: a drawing pad (mouse/finger), image upload, camera, and a preview of what the model sees.
import { defaultShape, sizeOf } from '../config.js';
import { setupCamera } from './camera.js';
import { $, setStatus } from './dom.js';
import { gridToRgba, gridToValues, pixelsToGrid, strokeBox, valuesToGrid } from './pixels.js';

const PAD_PIXELS = 256; // the pad is the model's H x W scaled up to about this many pixels on its long side

// imageInput: the config's image input; draw: the config's colours and stroke width.
// onInput(): something new to predict; onClear(): the pad was cleared.
export function createPad(imageInput, draw, { onInput, onClear }) {
  const { height: H, width: W } = imageInput;
  const pad = $('pad');
  const ctx = pad.getContext('2d');
  // source: 'draw' (strokes: cropped to their box) or 'image' (an upload, a camera frame, an API input: all of it)
  const state = { source: 'draw', drawing: false, queued: false };

  function clear() {
    ctx.fillStyle = draw.background;
    ctx.fillRect(0, 0, pad.width, pad.height);
  }

  function drawPreview(grid) {
    const preview = $('preview').getContext('2d');
    const image = preview.createImageData(W, H);
    image.data.set(gridToRgba(grid, imageInput));
    preview.putImageData(image, 0, 0);
  }

  // Draw an image/video frame onto the pad, centre-cropped to the model's aspect ratio.
  function drawSource(source, sw, sh) {
    const scale = Math.max(pad.width / sw, pad.height / sh);
    const w = sw * scale; const h = sh * scale;
    clear();
    ctx.drawImage(source, (pad.width - w) / 2, (pad.height - h) / 2, w, h);
    state.source = 'image';
    onInput();
  }

  // The pad as {inputName: {values, shape}} (and on the preview); null when nothing is drawn.
  function read() {
    const pixels = ctx.getImageData(0, 0, pad.width, pad.height).data;
    const box = state.source === 'draw' ? strokeBox(pixels, pad.width, pad.height) : [0, 0, pad.width, pad.height];
    if (!box) return null;
    const grid = pixelsToGrid(pixels, pad.width, pad.height, box, imageInput, $('invert').checked);
    drawPreview(grid);
    return { [imageInput.name]: { values: gridToValues(grid, imageInput.range), shape: defaultShape(imageInput) } };
  }

  // Show a single image given through the API on the pad and the preview, so the page shows what was classified.
  function show(feeds) {
    const given = feeds[imageInput.name];
    if (!given || given.shape[0] !== 1 || sizeOf(given.shape) !== H * W * imageInput.channels) return;
    drawPreview(valuesToGrid(given.values, imageInput.range));
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage($('preview'), 0, 0, pad.width, pad.height);
    state.source = 'image';
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
    if (state.source !== 'draw') { clear(); state.source = 'draw'; }
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

  function listen() {
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
      drawPreview(new Array(H * W * imageInput.channels).fill(0));
      onClear();
    });
    $('invert').addEventListener('change', () => onInput());
    $('file').addEventListener('change', async () => {
      const file = $('file').files[0];
      if (!file) return;
      try {
        const bitmap = await createImageBitmap(file);
        drawSource(bitmap, bitmap.width, bitmap.height);
      } catch (err) {
        setStatus(`Could not read ${file.name}: ${err.message}`, true);
      }
    });
    setupCamera(drawSource);
  }

  $('image-input').hidden = false;
  const k = Math.max(1, Math.ceil(PAD_PIXELS / Math.max(H, W)));
  pad.width = W * k;
  pad.height = H * k;
  $('preview').width = W;
  $('preview').height = H;
  $('preview-label').textContent = `What the model sees (${W}\u00d7${H})`;
  clear();
  listen();
  return { read, show };
}
