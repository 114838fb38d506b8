// Run a TF.js graph model (model.json + weight shards on disk) with the cpu backend in Node.
// Usage: node tfjs_run.js TF_MIN_JS MODEL_JSON REQUEST_JSON
// REQUEST_JSON: {"inputs": {name: {"file": path.bin, "dtype": "float32"|"int32", "shape": [...]}},
//                "latency": {"warmup": W, "runs": R, "time_budget_s": S|null}}  (inputs hold every sample; latency uses sample 0, batch 1)
// Prints one JSON object: {"tfjs_version", "backend", "outputs": {name: {"shape", "data"}}, "latency_ms": [...]}.
'use strict';
const fs = require('fs');
const path = require('path');

// Keep stdout for the JSON result only: tfjs prints a banner through console.log in Node.
console.log = (...a) => process.stderr.write(a.join(' ') + '\n');
console.warn = console.log;
console.info = console.log;

const [bundlePath, modelJsonPath, requestPath] = process.argv.slice(2);
const tf = require(path.resolve(bundlePath));

function readWeights(modelDir, manifest) {
  const specs = [];
  const buffers = [];
  for (const group of manifest) {
    for (const p of group.paths) buffers.push(fs.readFileSync(path.join(modelDir, p)));
    specs.push(...group.weights);
  }
  const all = Buffer.concat(buffers);
  return { specs, data: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) };
}

function typedArray(dtype, buf) {
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  if (dtype === 'float32') return new Float32Array(ab);
  if (dtype === 'int32') return new Int32Array(ab);
  if (dtype === 'bool') return new Uint8Array(ab);
  throw new Error(`unsupported input dtype ${dtype}`);
}

function sliceFirst(t) {
  return tf.slice(t, [0], [1]);
}

async function main() {
  await tf.setBackend('cpu');
  await tf.ready();
  const modelJson = JSON.parse(fs.readFileSync(modelJsonPath, 'utf8'));
  const { specs, data } = readWeights(path.dirname(modelJsonPath), modelJson.weightsManifest || []);
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs: specs, weightData: data,
    format: modelJson.format, generatedBy: modelJson.generatedBy, convertedBy: modelJson.convertedBy,
    signature: modelJson.signature, userDefinedMetadata: modelJson.userDefinedMetadata,
    modelInitializer: modelJson.modelInitializer,
  }));
  const request = JSON.parse(fs.readFileSync(requestPath, 'utf8'));
  const sig = modelJson.signature || {};
  const sigIn = sig.inputs || {};
  const sigOut = sig.outputs || {};
  // Feed by node name ("pixels:0" -> "pixels"), keyed from the signature names the caller uses.
  const feeds = {};
  for (const [name, spec] of Object.entries(request.inputs)) {
    const node = sigIn[name] ? sigIn[name].name.replace(/:0$/, '') : name;
    feeds[node] = tf.tensor(typedArray(spec.dtype, fs.readFileSync(spec.file)), spec.shape, spec.dtype);
  }
  const outNames = Object.keys(sigOut).length ? Object.keys(sigOut).sort() : model.outputNodes;
  const outNodes = outNames.map((n) => (sigOut[n] ? sigOut[n].name.replace(/:0$/, '') : n));
  const run = (f) => {
    const r = model.execute(f, outNodes);
    return Array.isArray(r) ? r : [r];
  };
  const results = run(feeds);
  const outputs = {};
  outNames.forEach((n, i) => {
    outputs[n] = { shape: results[i].shape, dtype: results[i].dtype, data: Array.from(results[i].dataSync()) };
  });
  tf.dispose(results);
  const times = [];
  const lat = request.latency || { warmup: 0, runs: 0 };
  const budgetNs = lat.time_budget_s ? BigInt(Math.round(lat.time_budget_s * 1e9)) : null;
  if (lat.runs > 0 || budgetNs !== null) {
    const one = {};
    for (const [k, t] of Object.entries(feeds)) one[k] = sliceFirst(t);
    for (let i = 0; i < lat.warmup; i++) tf.dispose(run(one).map((t) => (t.dataSync(), t)));
    const start = process.hrtime.bigint();
    for (let i = 0; budgetNs !== null || i < lat.runs; i++) {
      const t0 = process.hrtime.bigint();
      const r = run(one);
      r.forEach((t) => t.dataSync());
      const t1 = process.hrtime.bigint();
      tf.dispose(r);
      times.push(Number(t1 - t0) / 1e6);
      if (budgetNs !== null && t1 - start >= budgetNs) break;
    }
    tf.dispose(Object.values(one));
  }
  process.stdout.write(JSON.stringify({
    tfjs_version: tf.version.tfjs, backend: tf.getBackend(), outputs, latency_ms: times,
  }));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(3);
});
