// edgetool check --target tfjs: execute a graph model with tfjs (cpu backend, the vendored tf.min.js) in Node on
// zeros (variable dimensions set to 1), with executeAsync so control flow (while loops of RNNs) runs too.
// Usage: node tfjs_probe.js TF_MIN_JS MODEL_DIR. Prints one line "@@{json}": {ok, error}.
const [bundle, dir] = process.argv.slice(2);
const fs = require('fs');
const path = require('path');
const report = (o) => process.stdout.write('@@' + JSON.stringify(o) + '\n');
(async () => {
  const tf = require(bundle);
  tf.setBackend('cpu');
  const mj = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const groups = mj.weightsManifest || [];
  const data = Buffer.concat(groups.flatMap((g) => g.paths.map((p) => fs.readFileSync(path.join(dir, path.basename(p))))));
  const model = await tf.loadGraphModel({ load: async () => ({
    modelTopology: mj.modelTopology, weightSpecs: groups.flatMap((g) => g.weights),
    weightData: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength), signature: mj.signature,
  }) });
  const inputs = model.inputs.map((i) => tf.zeros(i.shape.map((s) => (s == null || s < 0 ? 1 : s)), i.dtype));
  const out = await model.executeAsync(inputs.length === 1 ? inputs[0] : inputs);
  (Array.isArray(out) ? out : [out]).forEach((t) => t.dataSync());
  report({ ok: true, error: '' });
})().catch((e) => report({ ok: false, error: String((e && e.message) || e) }));
