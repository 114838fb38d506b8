// LiteRT.js engine of an edgetool demo site (`edgetool demo --litert`): runs the fixed-batch-1 .tflite itself with
// @litertjs/core (vendored, import-mapped in index.html) on its single-threaded "compat" wasm build (SIMD128, no
// relaxed SIMD, no threads: needs no cross-origin isolation). app.js imports this module only when the site has it.
import { loadLiteRt, loadAndCompile, Tensor } from '@litertjs/core';

const TYPED = { float32: Float32Array, int8: Int8Array, uint8: Uint8Array };
const RANGE = { int8: [-128, 127], uint8: [0, 255] };

// Values in the model's input domain -> the typed array the .tflite input wants (quantized if it is integer).
function toInput(values, io) {
  if (io.dtype === 'float32') return values instanceof Float32Array ? values : Float32Array.from(values, Number);
  const [lo, hi] = RANGE[io.dtype];
  const out = new TYPED[io.dtype](values.length);
  for (let i = 0; i < values.length; i++) {
    out[i] = Math.min(hi, Math.max(lo, Math.round(Number(values[i]) / io.scale) + io.zeroPoint));
  }
  return out;
}

// The output tensor as float32 (dequantized if it is integer).
function fromOutput(array, io) {
  if (io.dtype === 'float32') return Float32Array.from(array);
  return Float32Array.from(array, (q) => (q - io.zeroPoint) * io.scale);
}

// spec: demo-config.json's "litert" entry. Resolves to {name, label, run(values) -> Float32Array of one row}.
export async function createEngine(spec) {
  const base = window.location.href;
  await loadLiteRt(new URL(spec.wasmScript, base).href); // a .js file path: loads exactly this build
  const model = await loadAndCompile(new URL(spec.modelUrl, base).href, { accelerator: 'wasm' });
  const shape = spec.input.shape;
  return {
    name: 'litert',
    label: spec.label,
    async run(values) {
      const input = new Tensor(toInput(values, spec.input), shape);
      let outputs = [];
      try {
        outputs = await model.run(input);
        return fromOutput(outputs[0].toTypedArray(), spec.output);
      } finally {
        input.delete();
        for (const t of outputs) t.delete();
      }
    },
  };
}
