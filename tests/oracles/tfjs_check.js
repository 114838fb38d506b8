// Run a TF.js graph model on samples in Node (cpu backend, executeAsync so control flow works), for the zoo's
// independent check of the tfjs cell. Usage: node tfjs_check.js TF_MIN_JS MODEL_DIR INPUTS_JSON OUTPUTS_JSON
// INPUTS_JSON: {signatureInputKey: {"dtype": "float32"|"int32", "shape": [...], "data": [flat numbers]}}
// OUTPUTS_JSON (written): {signatureOutputKey: {"shape": [...], "data": [flat numbers]}}
'use strict';
const fs = require('fs');
const path = require('path');

console.log = (...a) => process.stderr.write(a.join(' ') + '\n');
console.warn = console.log;

async function main() {
  const [bundle, modelDir, inputsPath, outputsPath] = process.argv.slice(2);
  const tf = require(path.resolve(bundle));
  await tf.setBackend('cpu');
  const modelJson = JSON.parse(fs.readFileSync(path.join(modelDir, 'model.json'), 'utf8'));
  const specs = [];
  const buffers = [];
  for (const group of modelJson.weightsManifest || []) {
    for (const p of group.paths) buffers.push(fs.readFileSync(path.join(modelDir, p)));
    specs.push(...group.weights);
  }
  const all = Buffer.concat(buffers);
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs: specs,
    weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
    signature: modelJson.signature, format: modelJson.format, modelInitializer: modelJson.modelInitializer,
  }));
  const sig = modelJson.signature;
  const inputs = JSON.parse(fs.readFileSync(inputsPath, 'utf8'));
  const feeds = {};
  for (const [key, spec] of Object.entries(sig.inputs)) {
    const given = inputs[key];
    if (!given) throw new Error(`no data for input ${key}`);
    feeds[spec.name] = tf.tensor(given.data, given.shape, given.dtype);
  }
  const keys = Object.keys(sig.outputs);
  let outs = await model.executeAsync(feeds, keys.map((k) => sig.outputs[k].name));
  if (!Array.isArray(outs)) outs = [outs];
  const result = {};
  for (let i = 0; i < keys.length; i++) {
    result[keys[i]] = { shape: outs[i].shape, data: Array.from(await outs[i].data()) };
  }
  fs.writeFileSync(outputsPath, JSON.stringify(result));
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + '\n'); process.exit(3); });
