// Pure post-processing of model outputs: probability rows, softmax, top-k with labels, the text of extra heads.
// No DOM, no tfjs: tests/js/postprocess.test.mjs runs it in Node.

export const PROB_TOLERANCE = 1e-3; // float outputs: how far from 1 a probability row may sum
export const MAX_SHOWN_VALUES = 16; // raw values of a head shown before "… (N values)"

// A [0,1] row summing to 1 (within tolerance) is shown ranked; anything else as raw values.
export function isProbabilityRow(row, tolerance = PROB_TOLERANCE) {
  const sum = row.reduce((a, b) => a + b, 0);
  return row.length > 1 && row.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < tolerance;
}

// The row as probabilities: kept when it already is one (or has one value), else its softmax.
// tolerance: how far from 1 the sum of a probability row may be (int8 softmax outputs are multiples of 1/256).
export function toProbabilities(row, tolerance = PROB_TOLERANCE) {
  if (row.length === 1 || isProbabilityRow(row, tolerance)) return row;
  const max = Math.max(...row);
  const exps = row.map((v) => Math.exp(v - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / total);
}

// The k most probable classes, best first: [{label, probability}]; a class without a label is named by its index.
export function topK(probs, labels, k) {
  return probs
    .map((p, i) => ({ label: labels[i] !== undefined ? labels[i] : String(i), probability: p, index: i }))
    .sort((a, b) => b.probability - a.probability)
    .slice(0, k)
    .map(({ label, probability }) => ({ label, probability }));
}

// A flat batch-major array cut into `batch` plain-array rows of equal length.
export function splitRows(values, batch) {
  const k = values.length / batch;
  const rows = [];
  for (let b = 0; b < batch; b++) rows.push(Array.from(values.slice(b * k, (b + 1) * k)));
  return rows;
}

export const sigmoid = (v) => 1 / (1 + Math.exp(-v));

// Multi-label rows: each value is its own yes/no probability, never softmaxed against the others. Kept as they are
// when the model ends in a sigmoid (or every value already is in [0,1]), else taken as logits (their sigmoid).
export function independentProbabilities(row, activation) {
  if (activation === 'sigmoid' || (activation !== 'linear' && row.every((v) => v >= 0 && v <= 1))) return row;
  return row.map(sigmoid);
}

// How each task turns the ranked head's row into probabilities (tasks without an entry are not ranked: their
// outputs are shown as they are, e.g. a mask or named numbers). k: how many of them top lists (null: the config's).
export const RANKINGS = {
  classification: { probabilities: (row, ranked) => toProbabilities(row, ranked.tolerance), k: null },
  detection: { probabilities: (row, ranked) => toProbabilities(row, ranked.tolerance), k: null },
  multilabel: { probabilities: (row, ranked) => independentProbabilities(row, ranked.activation), k: Infinity },
};

// An engine's raw result ({outputs: {head: {shape, values}}, ms, backend, engine}) with the ranked head's
// probabilities and top-k added: one row and one list for batch 1, else a list of each per sample.
// ranked: {name, batch, tolerance, labels, k, task (default classification), activation}. Tasks without a ranking
// (segmentation, regression) get probabilities null and an empty top.
export function withRanking(raw, ranked) {
  const ranking = RANKINGS[ranked.task || 'classification'];
  if (!ranking) return { probabilities: null, top: [], ...raw };
  const k = ranking.k === null ? ranked.k : ranking.k;
  const rows = splitRows(raw.outputs[ranked.name].values, ranked.batch)
    .map((row) => ranking.probabilities(row, ranked));
  const top = rows.map((row) => topK(row, ranked.labels, k));
  if (ranked.batch === 1) return { probabilities: rows[0], top: top[0], ...raw };
  return { probabilities: rows, top, ...raw };
}

// The class of every position of a [.., H, W, C] (or [.., T, C]) sample: the arg-max over its last axis (first
// index on ties, as numpy's argmax). values: the sample's H*W*C values; classes: C -> Int32Array of H*W classes.
export function argmaxLastAxis(values, classes) {
  const n = values.length / classes;
  const out = new Int32Array(n);
  for (let p = 0; p < n; p++) {
    let best = 0;
    for (let c = 1; c < classes; c++) if (values[p * classes + c] > values[p * classes + best]) best = c;
    out[p] = best;
  }
  return out;
}

export function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

// True when every value of every head ({name: {values}}) is a finite number.
export const allFinite = (heads) => Object.values(heads).every((h) => Array.from(h.values).every(Number.isFinite));

export const percent = (p) => `${(p * 100).toFixed(1)}%`;

// The first sample of a head (shape [batch, ...] or a plain vector).
export function firstSample(head) {
  const { shape, values } = head;
  return Array.from(values.slice(0, shape.length > 1 ? values.length / shape[0] : values.length));
}

// One line describing a head's first sample: its top-k as "i: p%" when it is a probability row, else its values.
export function headSummary(row, k) {
  if (isProbabilityRow(row)) {
    return row.map((p, i) => [i, p]).sort((a, b) => b[1] - a[1]).slice(0, k)
      .map(([i, p]) => `${i}: ${percent(p)}`).join(' \u00b7 ');
  }
  const more = row.length > MAX_SHOWN_VALUES ? ` \u2026 (${row.length} values)` : '';
  return row.slice(0, MAX_SHOWN_VALUES).map((v) => Number(v).toPrecision(4)).join(', ') + more;
}

// "name [dims]" of a head, its batch dimension left out ('1' for a scalar per sample).
export const headTitle = (name, shape) => `${name} [${shape.slice(1).join(',') || '1'}]`;
