// Run a TF.js graph model (model.json + weight shards on disk) with the cpu backend in Node, as a session:
// the caller streams requests, one JSON object per line on stdin, and reads one JSON line per request on stdout.
// Usage: node tfjs_run.js TF_MIN_JS MODEL_JSON
// First line written: {"ready": true, "tfjs_version", "backend"}.
// Requests:
//   {"op": "predict", "inputs": {name: {"file": in.bin, "dtype": "float32"|"int32"|"bool", "shape": [...]}},
//    "out_dir": DIR}  -> runs the batch, writes each output's raw values to DIR/out<i>.bin and answers
//                        {"outputs": {name: {"file", "dtype", "shape"}}}
//   {"op": "latency", "inputs": {... one sample ...}, "warmup": W, "runs": R, "time_budget_s": S|null}
//                     -> {"latency_ms": [...]} (batch 1, execute + dataSync per call)
//   {"op": "close"} or end of stdin -> exit 0.
// Any error: the stack goes to stderr and the process exits 3.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

// Keep stdout for the JSON answers only: tfjs prints a banner through console.log in Node.
console.log = (...a) => process.stderr.write(a.join(' ') + '\n');
console.warn = console.log;
console.info = console.log;

const [bundlePath, modelJsonPath] = process.argv.slice(2);
const tf = require(path.resolve(bundlePath));

// Every shard must resolve (symlinks included) inside the model directory; edgetool checks this before starting
// Node (fsutil.resolve_inside), and this is the same rule again where the bytes are read.
function shardPath(modelDir, p) {
  const root = fs.realpathSync(modelDir);
  const real = fs.realpathSync(path.resolve(root, String(p)));
  if (typeof p !== 'string' || path.isAbsolute(p) || !real.startsWith(root + path.sep)) {
    throw new Error(`weight shard path ${JSON.stringify(p)} is not inside ${root}`);
  }
  return real;
}

function readWeights(modelDir, manifest) {
  const specs = [];
  const buffers = [];
  for (const group of manifest) {
    for (const p of group.paths) buffers.push(fs.readFileSync(shardPath(modelDir, p)));
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

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
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
  const sig = modelJson.signature || {};
  const sigIn = sig.inputs || {};
  const sigOut = sig.outputs || {};
  const outNames = Object.keys(sigOut).length ? Object.keys(sigOut).sort() : model.outputNodes;
  const outNodes = outNames.map((n) => (sigOut[n] ? sigOut[n].name.replace(/:0$/, '') : n));
  // Feed by node name ("pixels:0" -> "pixels"), keyed from the signature names the caller uses.
  const feedsOf = (inputs) => {
    const feeds = {};
    for (const [name, spec] of Object.entries(inputs)) {
      const node = sigIn[name] ? sigIn[name].name.replace(/:0$/, '') : name;
      feeds[node] = tf.tensor(typedArray(spec.dtype, fs.readFileSync(spec.file)), spec.shape, spec.dtype);
    }
    return feeds;
  };
  const run = (f) => {
    const r = model.execute(f, outNodes);
    return Array.isArray(r) ? r : [r];
  };

  const predict = (req) => {
    const feeds = feedsOf(req.inputs);
    const results = run(feeds);
    const outputs = {};
    outNames.forEach((n, i) => {
      const values = results[i].dataSync();
      const file = path.join(req.out_dir, `out${i}.bin`);
      fs.writeFileSync(file, Buffer.from(values.buffer, values.byteOffset, values.byteLength));
      outputs[n] = { file, dtype: results[i].dtype, shape: results[i].shape };
    });
    tf.dispose(results);
    tf.dispose(Object.values(feeds));
    return { outputs };
  };

  const latency = (req) => {
    const one = feedsOf(req.inputs);
    const times = [];
    const budgetNs = req.time_budget_s ? BigInt(Math.round(req.time_budget_s * 1e9)) : null;
    for (let i = 0; i < (req.warmup || 0); i++) tf.dispose(run(one).map((t) => (t.dataSync(), t)));
    const start = process.hrtime.bigint();
    for (let i = 0; budgetNs !== null || i < (req.runs || 0); i++) {
      const t0 = process.hrtime.bigint();
      const r = run(one);
      r.forEach((t) => t.dataSync());
      const t1 = process.hrtime.bigint();
      tf.dispose(r);
      times.push(Number(t1 - t0) / 1e6);
      if (budgetNs !== null && t1 - start >= budgetNs) break;
    }
    tf.dispose(Object.values(one));
    return { latency_ms: times };
  };

  answer({ ready: true, tfjs_version: tf.version.tfjs, backend: tf.getBackend() });
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    if (req.op === 'close') break;
    if (req.op === 'predict') answer(predict(req));
    else if (req.op === 'latency') answer(latency(req));
    else throw new Error(`unknown request op ${req.op}`);
  }
  rl.close();
}

main().then(() => process.exit(0)).catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(3);
});
