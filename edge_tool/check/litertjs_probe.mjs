// edgetool check --target litertjs: load, compile and run a .tflite with the vendored LiteRT.js (@litertjs/core,
// its single-threaded "compat" wasm build) in Node. Usage: node litertjs_probe.mjs VENDOR_DIR MODEL.tflite
// Prints one line "@@{json}": {ok, error}. With a third argument (PLAN.json, from edge_tool/check/lm_cache.py) the
// model is a language model: prefill on the plan's tokens, then one decode per remaining token, each fed the KV
// caches the call before returned; the line then carries the decode logits. LiteRT.js is built for browsers; the shims below give it what it looks
// for there (self, importScripts, the wasm bytes) so the same runtime the demo page ships runs here.
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { createRequire } from 'node:module';

const [vendor, modelPath, planPath] = process.argv.slice(2);
const report = (o) => process.stdout.write('@@' + JSON.stringify(o) + '\n');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgetool-litertjs-'));
try {
  // core.js imports '@litertjs/wasm-utils' by bare name (an import map resolves it in the page).
  const core = fs.readFileSync(path.join(vendor, 'core.js'), 'utf8')
    .replace(/from\s*["']@litertjs\/wasm-utils["']/g, 'from "./wasm-utils.mjs"');
  fs.writeFileSync(path.join(tmp, 'core.mjs'), core);
  fs.copyFileSync(path.join(vendor, 'wasm-utils.js'), path.join(tmp, 'wasm-utils.mjs'));
  globalThis.self = globalThis;
  globalThis.require = createRequire(import.meta.url);
  globalThis.__dirname = vendor;
  globalThis.importScripts = (p) => vm.runInThisContext(fs.readFileSync(p, 'utf8'), { filename: p });
  const wasmJs = path.join(vendor, 'litert_wasm_compat_internal.js');
  globalThis.Module = { wasmBinary: fs.readFileSync(wasmJs.replace(/\.js$/, '.wasm')) };
  const lrt = await import(pathToFileURL(path.join(tmp, 'core.mjs')).href);
  await lrt.loadLiteRt(wasmJs);
  const model = await lrt.loadAndCompile(new Uint8Array(fs.readFileSync(modelPath)), { accelerator: 'wasm' });
  if (planPath) {
    report({ ok: true, error: '', decode_logits: await runLm(lrt, model, JSON.parse(fs.readFileSync(planPath, 'utf8'))) });
    process.exit(0);
  }
  const TYPED = { float32: Float32Array, int8: Int8Array, uint8: Uint8Array, int32: Int32Array };
  const inputs = model.getInputDetails().map((d) => {
    const shape = Array.from(d.shape, (v) => (v < 0 ? 1 : v));
    return new lrt.Tensor(new (TYPED[d.dtype] || Float32Array)(shape.reduce((a, b) => a * b, 1)), shape);
  });
  const outputs = await model.run(inputs);
  for (const t of [...inputs, ...outputs]) t.delete();
  report({ ok: true, error: '' });
} catch (e) {
  report({ ok: false, error: String((e && e.message) || e) });
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

// prefill then decode, every kv_cache_* output fed to the next call's input of the same name; decode logits per step.
async function runLm(lrt, model, plan) {
  const sig = model.signatures[plan.prefill];
  let caches = {};
  for (const d of sig.getInputDetails()) {
    if (d.name.startsWith('kv_cache_')) caches[d.name] = new lrt.Tensor(new Float32Array(d.shape.reduce((a, b) => a * b, 1)), Array.from(d.shape));
  }
  const call = async (key, tokens, start) => {
    const feeds = {
      tokens: new lrt.Tensor(Int32Array.from(tokens), [1, tokens.length]),
      input_pos: new lrt.Tensor(Int32Array.from(tokens, (_, i) => start + i), [tokens.length]),
      ...caches,
    };
    const out = await model.run(key, feeds);
    feeds.tokens.delete(); feeds.input_pos.delete();
    for (const t of Object.values(caches)) t.delete();
    caches = Object.fromEntries(Object.entries(out).filter(([name]) => name.startsWith('kv_cache_')));
    const logits = Array.from(await out.logits.data());
    out.logits.delete();
    return logits;
  };
  await call(plan.prefill, plan.tokens.slice(0, plan.t), 0);
  const steps = [];
  for (let i = plan.t; i < plan.tokens.length; i++) steps.push(await call('decode', [plan.tokens[i]], i));
  for (const t of Object.values(caches)) t.delete();
  return steps;
}
