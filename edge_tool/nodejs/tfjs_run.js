// Run a TF.js graph model (model.json + weight shards on disk) in Node, as a session, on the wasm backend (what the
// demo page runs; SIMD when Node has it) or the cpu backend: the caller streams requests, one JSON object per line
// on stdin, and reads one JSON line per request on stdout.
// Usage: node tfjs_run.js TF_MIN_JS MODEL_JSON [wasm WASM_DIR | cpu]
// First line written: {"ready": true, "tfjs_version", "backend"}.
// Graphs with control flow (LSTM/GRU while loops) need executeAsync: the first execute that says so switches to it.
// Requests:
//   {"op": "predict", "inputs": {name: {"file": in.bin, "dtype": "float32"|"int32"|"bool", "shape": [...]}},
//    "out_dir": DIR}  -> runs the batch, writes each output's raw values to DIR/out<i>.bin and answers
//                        {"outputs": {name: {"file", "dtype", "shape"}}}
//   {"op": "latency", "inputs": {... one sample ...}, "warmup": W, "runs": R, "time_budget_s": S|null}
//                     -> {"latency_ms": [...]} (batch 1, execute + dataSync per call)
//   {"op": "close"} or end of stdin -> exit 0.
// An error while loading or running the model answers {"failed": "<one-line message>"} (stack on stderr); a
// request after a failed start is not read (the process exits 3).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

// Keep stdout for the JSON answers only: tfjs prints a banner through console.log in Node.
console.log = (...a) => process.stderr.write(a.join(' ') + '\n');
console.warn = console.log;
console.info = console.log;

const [bundlePath, modelJsonPath, backendName = 'cpu', wasmDir = ''] = process.argv.slice(2);
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

// tf-backend-wasm.min.js requires @tensorflow/tfjs-core: hand it the tfjs bundle already loaded.
async function useBackend(name) {
  if (name === 'wasm') {
    const Module = require('module');
    const load = Module._load;
    Module._load = function (request, ...rest) {
      return request === '@tensorflow/tfjs-core' ? tf : load.call(this, request, ...rest);
    };
    const wasm = require(path.join(path.resolve(wasmDir), 'tf-backend-wasm.min.js'));
    Module._load = load;
    wasm.setWasmPaths(path.resolve(wasmDir) + path.sep);
  }
  if (!(await tf.setBackend(name))) throw new Error(`the tfjs ${name} backend failed to initialise`);
  await tf.ready();
}

function oneLine(err) {
  const msg = String(err && err.message ? err.message : err).trim().split('\n')[0];
  return msg.slice(0, 400);
}

// The weight shards as one stream of bytes, in manifest order (groups, then paths), read on demand.
function shardReader(modelDir, manifest) {
  const files = manifest.flatMap((group) => group.paths.map((p) => shardPath(modelDir, p)));
  let next = 0;
  let fd = null;
  let left = 0;
  const read = (n) => { // the next n bytes, in a buffer of their own
    const out = new Uint8Array(n);
    for (let got = 0; got < n;) {
      if (left === 0) {
        if (fd !== null) fs.closeSync(fd);
        if (next === files.length) throw new Error(`the weight shards end ${n - got} bytes before the weights do`);
        fd = fs.openSync(files[next++], 'r');
        left = fs.fstatSync(fd).size;
        continue;
      }
      const k = fs.readSync(fd, out, got, Math.min(n - got, left, 1 << 30), null);
      if (k <= 0) throw new Error(`weight shard ${files[next - 1]} ended early`);
      got += k;
      left -= k;
    }
    return out.buffer;
  };
  return { read, close: () => fd !== null && fs.closeSync(fd) };
}

const BYTES = { float32: 4, float16: 2, int32: 4, uint16: 2, uint8: 1, bool: 1, complex64: 8 }; // tfjs' sizes
const PLAIN = { float32: Float32Array, int32: Int32Array, bool: Uint8Array }; // as tfjs' decodeWeight views them

// One weight's bytes, counted as tfjs' getWeightBytelength counts them (a string: uint32 length + bytes each).
function weightBytes(reader, spec) {
  const size = spec.shape.reduce((a, b) => a * b, 1);
  if (spec.dtype === 'string' && !spec.quantization) {
    const parts = [];
    for (let i = 0; i < size; i++) {
      const length = reader.read(4);
      parts.push(Buffer.from(length), Buffer.from(reader.read(new Uint32Array(length)[0])));
    }
    const all = Buffer.concat(parts);
    return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  }
  const bytes = BYTES[spec.quantization ? spec.quantization.dtype : spec.dtype];
  if (bytes === undefined) throw new Error(`weight ${spec.name} has a dtype tfjs cannot decode (${spec.dtype})`);
  return reader.read(size * bytes);
}

const BLOCK_BYTES = 4 << 20; // a quantized weight is decoded this many bytes of codes at a time

// A quantized float32/int32 weight decoded by tfjs' decodeWeights a block of rows at a time (its dequantization is
// element by element, so the values are the ones it gives for the whole weight) into one array, then made a tensor:
// its codes and their copy are never whole in memory beside the values.
function decodedInBlocks(reader, spec) {
  const [rows, ...rest] = spec.shape;
  const perRow = rest.reduce((a, b) => a * b, 1);
  const bytesPerRow = perRow * BYTES[spec.quantization.dtype];
  const step = Math.max(1, Math.floor(BLOCK_BYTES / Math.max(1, bytesPerRow)));
  const values = new PLAIN[spec.dtype](rows * perRow);
  for (let row = 0; row < rows; row += step) {
    const n = Math.min(step, rows - row);
    const block = tf.io.decodeWeights(reader.read(n * bytesPerRow), [{ ...spec, shape: [n, ...rest] }])[spec.name];
    values.set(block.dataSync(), row * perRow);
    block.dispose();
  }
  return tf.tensor(values, spec.shape, spec.dtype);
}

// The weight map tfjs' loadGraphModel would build, one weight at a time: each read from the shards into a buffer
// of its own and made a tensor before the next is read (a plain float32/int32/bool weight as tfjs' decodeWeight
// makes it, a quantized one by tfjs' decodeWeights a block of rows at a time, the others by it whole). tfjs' own
// path takes every shard joined into one buffer and then copies each weight out of it: a big model three times in
// memory at once.
function readWeightMap(modelDir, manifest) {
  const reader = shardReader(modelDir, manifest);
  const map = {};
  try {
    for (const spec of manifest.flatMap((group) => group.weights)) {
      const Plain = !spec.quantization && PLAIN[spec.dtype];
      const blocks = spec.quantization && spec.shape.length > 1 && ['float32', 'int32'].includes(spec.dtype)
        && BYTES[spec.quantization.dtype] !== undefined;
      if (blocks) {
        map[spec.name] = decodedInBlocks(reader, spec);
        continue;
      }
      const data = weightBytes(reader, spec);
      map[spec.name] = Plain ? tf.tensor(new Plain(data), spec.shape, spec.dtype) : tf.io.decodeWeights(data, [spec])[spec.name];
    }
  } finally {
    reader.close();
  }
  return map;
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
  await useBackend(backendName);
  const modelJson = JSON.parse(fs.readFileSync(modelJsonPath, 'utf8'));
  const manifest = modelJson.weightsManifest || [];
  const weightMap = readWeightMap(path.dirname(modelJsonPath), manifest);
  // GraphModel takes its io functions as a constructor argument: hand it the weight map built above
  const io = Object.assign({}, tf.io, { decodeWeights: () => weightMap });
  const model = new tf.GraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs: manifest.flatMap((group) => group.weights),
    weightData: new ArrayBuffer(0), format: modelJson.format, generatedBy: modelJson.generatedBy,
    convertedBy: modelJson.convertedBy, signature: modelJson.signature,
    userDefinedMetadata: modelJson.userDefinedMetadata, modelInitializer: modelJson.modelInitializer,
  }), {}, io);
  await model.load();
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
  let useAsync = false;
  const run = async (f) => {
    let r;
    if (!useAsync) {
      try {
        r = model.execute(f, outNodes);
      } catch (err) {
        if (!/executeAsync/.test(String(err && err.message))) throw err;
        useAsync = true; // control flow (while loops, TensorLists): only executeAsync runs it
      }
    }
    if (useAsync) r = await model.executeAsync(f, outNodes);
    return Array.isArray(r) ? r : [r];
  };

  const predict = async (req) => {
    const feeds = feedsOf(req.inputs);
    const results = await run(feeds);
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

  const latency = async (req) => {
    const one = feedsOf(req.inputs);
    const times = [];
    const budgetNs = req.time_budget_s ? BigInt(Math.round(req.time_budget_s * 1e9)) : null;
    for (let i = 0; i < (req.warmup || 0); i++) tf.dispose((await run(one)).map((t) => (t.dataSync(), t)));
    const start = process.hrtime.bigint();
    for (let i = 0; budgetNs !== null || i < (req.runs || 0); i++) {
      const t0 = process.hrtime.bigint();
      const r = await run(one);
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
    try {
      if (req.op === 'predict') answer(await predict(req));
      else if (req.op === 'latency') answer(await latency(req));
      else throw new Error(`unknown request op ${req.op}`);
    } catch (err) {
      process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
      answer({ failed: oneLine(err) });
    }
  }
  rl.close();
}

main().then(() => process.exit(0)).catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  answer({ failed: oneLine(err) });
  process.exit(3);
});
