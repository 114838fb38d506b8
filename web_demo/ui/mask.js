// A segmentation result: the class of every position (the arg-max of the output's last axis) drawn as a colour
// per class over the input image, with a legend. The mask canvas holds exactly one pixel per output position, in its
// class colour (opaque); CSS lays it half-transparent over a copy of the model's input.
import { argmaxLastAxis } from '../postprocess.js';
import { $, textElement } from './dom.js';

// Colour of class i as [r, g, b]: a fixed, well-spread palette (class 0 dark: usually the background), then hues.
const PALETTE = [[0, 0, 0], [230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
  [145, 30, 180], [70, 240, 240], [240, 50, 230], [210, 245, 60], [250, 190, 212], [0, 128, 128],
  [220, 190, 255], [170, 110, 40], [255, 250, 200], [128, 0, 0], [170, 255, 195], [128, 128, 0], [255, 215, 180],
  [0, 0, 128]];

export function classColour(i) {
  return i < PALETTE.length ? PALETTE[i] : [(i * 67) % 256, (i * 151) % 256, (i * 199) % 256];
}

// head: the output {shape: [1, H, W, C] or [1, T, C], values}; labels: class names ([] : indices).
// -> {height, width, classes: Int32Array} of the first sample.
export function maskOf(head) {
  const dims = head.shape.slice(1);
  const classes = dims[dims.length - 1];
  const height = dims.length >= 3 ? dims[0] : 1;
  const per = head.values.length / head.shape[0];
  const width = per / classes / height;
  return { height, width, classes: argmaxLastAxis(head.values.slice(0, per), classes), count: classes };
}

function legend(mask, labels) {
  const share = new Array(mask.count).fill(0);
  for (const c of mask.classes) share[c] += 1;
  return share.map((n, c) => [c, n]).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]).map(([c, n]) => {
    const li = document.createElement('li');
    li.dataset.class = String(c);
    const swatch = textElement('span', 'swatch', '');
    swatch.style.background = `rgb(${classColour(c).join(',')})`;
    li.append(swatch, textElement('span', 'label', labels[c] !== undefined ? labels[c] : String(c)),
      textElement('span', 'p', `${((100 * n) / mask.classes.length).toFixed(1)}%`));
    return li;
  });
}

// Draw the mask of `head` over `source` (a canvas with the model's input, or null) and its legend.
export function showMask(head, labels, source) {
  const mask = maskOf(head);
  const canvas = $('seg-mask');
  canvas.width = mask.width;
  canvas.height = mask.height;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(mask.width, mask.height);
  mask.classes.forEach((c, p) => { image.data.set([...classColour(c), 255], p * 4); });
  ctx.putImageData(image, 0, 0);
  const under = $('seg-input');
  under.hidden = !source;
  if (source) {
    under.width = source.width;
    under.height = source.height;
    under.getContext('2d').drawImage(source, 0, 0);
  }
  $('seg-legend').replaceChildren(...legend(mask, labels));
  $('seg').hidden = false;
  return mask;
}
