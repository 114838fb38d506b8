// The page config the site writes (demo-config.json, see edge_tool/demo/site.py) and the feeds it implies:
// every model input (the first image-like one gets the drawing pad) and every output head (the first one is the
// ranked one labels apply to). Pure apart from loadConfig: tests/js/config.test.mjs runs it in Node.

export const CONFIG_URL = 'demo-config.json';

// The parsed page config with \`inputs\`/\`outputs\` filled in from \`input\`/\`output\` on sites that only have those.
export function describe(raw) {
  return { ...raw, inputs: raw.inputs || [raw.input], outputs: raw.outputs || [raw.output] };
}

// The input the drawing pad feeds (the first image-like one), null when there is none.
export const imageInputOf = (config) => config.inputs.find((i) => i.kind === 'image') || null;

export async function loadConfig(url = CONFIG_URL) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return describe(await response.json());
}

// URL options: ?backend=NAME, ?threads=N, ?engine=NAME, ?litert-build=NAME (LiteRT.js wasm build: compat | default |
// threaded; see engines/litert-build.js); null when absent (threads: or not a positive integer).
export function pageOptions(search) {
  const params = new URLSearchParams(search);
  const threads = Number.parseInt(params.get('threads'), 10);
  return Object.freeze({ backend: params.get('backend'), engine: params.get('engine'),
    threads: Number.isInteger(threads) && threads >= 1 ? threads : null, litertBuild: params.get('litert-build') });
}

export const sizeOf = (shape) => shape.reduce((a, b) => a * b, 1);

// Shape of one sample of an input: the size chosen for open image dimensions (feedShape), else batch 1.
export function defaultShape(inp) {
  if (inp.feedShape) return inp.feedShape.slice();
  return inp.shape.map((d, i) => (i === 0 || d === null ? 1 : d));
}

// "name dtype[dims] → head[dims] · ENGINE" for the footer; engine: the running engine's title (engines/engine.js).
export function modelInfoText(config, engine) {
  const dims = (shape) => shape.map((d) => (d === null ? '?' : d)).join(',');
  return `${config.inputs.map((i) => `${i.name} ${i.dtype}[${dims(i.shape)}]`).join(', ')} \u2192 `
    + `${config.outputs.map((o) => `${o.name}[${dims(o.shape)}]`).join(', ')} \u00b7 ${engine}`;
}

// The short side from which an image input counts as a photo: colour inputs from 24 px (CIFAR's 32x32 and up),
// grey ones from 64 px (28x28 MNIST-like digits and sketches stay drawable; a 96x96 scan does not).
export const PHOTO_MIN_SIDE = Object.freeze({ colour: 24, grey: 64 });

// The image input's UI: 'photo' (upload and camera first, no drawing pad, no colour inversion) or 'draw' (the pad).
export function inputStyle(inp) {
  const side = Math.min(inp.height, inp.width);
  return side >= (inp.channels === 3 ? PHOTO_MIN_SIDE.colour : PHOTO_MIN_SIDE.grey) ? 'photo' : 'draw';
}

// One sample of zeros for every input: {inputName: {values, shape}}.
export function zeroFeeds(inputs) {
  return Object.fromEntries(inputs.map((inp) => {
    const shape = defaultShape(inp);
    return [inp.name, { values: new Float32Array(sizeOf(shape)), shape }];
  }));
}

// predict()'s arguments -> {inputName: {values, shape}} covering every input exactly once.
export function toFeeds(inputs, values, shape) {
  if (Array.isArray(values) || ArrayBuffer.isView(values)) {
    if (inputs.length !== 1) {
      throw new Error(`predict: this model has ${inputs.length} inputs (${inputs.map((i) => i.name).join(', ')}); `
        + 'pass an object {inputName: values}');
    }
    return { [inputs[0].name]: { values, shape: shape ? Array.from(shape) : defaultShape(inputs[0]) } };
  }
  if (!values || typeof values !== 'object') throw new Error('predict: expected values or {inputName: values}');
  const known = new Set(inputs.map((i) => i.name));
  const unknown = Object.keys(values).filter((k) => !known.has(k));
  if (unknown.length) throw new Error(`predict: unknown input(s) ${unknown.join(', ')}; the model takes ${[...known].join(', ')}`);
  return Object.fromEntries(inputs.map((inp) => {
    const v = values[inp.name];
    if (v === undefined) throw new Error(`predict: no values for input ${inp.name}`);
    const plain = Array.isArray(v) || ArrayBuffer.isView(v);
    return [inp.name, { values: plain ? v : v.values, shape: !plain && v.shape ? Array.from(v.shape) : defaultShape(inp) }];
  }));
}

// Every feed has as many values as its shape holds and all agree on the batch; returns that batch.
export function checkFeeds(inputs, feeds) {
  let batch = null;
  for (const inp of inputs) {
    const { values, shape } = feeds[inp.name];
    const size = sizeOf(shape);
    if (!values || values.length !== size) {
      throw new Error(`predict: ${inp.name} shape [${shape}] needs ${size} values, got ${values ? values.length : 0}`);
    }
    if (batch !== null && shape[0] !== batch) throw new Error(`predict: inputs disagree on the batch (${batch} vs ${shape[0]})`);
    batch = shape[0];
  }
  return batch;
}
