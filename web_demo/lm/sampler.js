// The sampler every edgetool runtime shares (docs/lm.md), so that the page, the native interpreter, the board and
// LiteRT-LM pick the same tokens from the same logits. Pure: tests/js/lm.test.mjs runs it in Node against Python.
//
//   greedy (temperature 0): argmax, the lowest id on ties; draws no number.
//   seeded: the candidates are the ids by logit, highest first (lowest id on ties), cut to top_k (0: all); their
//     weights exp((logit - max) / temperature) in float64; one uniform u in [0, 1) per token from xorshift32; the
//     token is the first candidate whose running weight sum exceeds u * total (the last one if none does).
//   xorshift32: state = seed mod 2^32 (0 -> 0x9E3779B9); x ^= x << 13; x ^= x >>> 17; x ^= x << 5 (mod 2^32);
//     u = (x >>> 8) / 2^24.

export const ZERO_SEED = 0x9e3779b9;

// A xorshift32 stream: {next(): uint32, uniform(): [0, 1) with 24 bits}.
export function xorshift32(seed) {
  let x = Number(BigInt.asUintN(32, BigInt(seed))) >>> 0;
  if (x === 0) x = ZERO_SEED;
  const next = () => {
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    return x;
  };
  return { next, uniform: () => (next() >>> 8) / 16777216 };
}

// The index of the largest value, the lowest on ties.
export function argmax(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

// Ids ordered by logit (highest first, the lowest id on ties), the first topK of them (0 or >= length: all).
export function candidates(logits, topK) {
  const ids = Array.from(logits, (_, i) => i);
  ids.sort((a, b) => (logits[b] - logits[a]) || (a - b));
  return topK > 0 && topK < ids.length ? ids.slice(0, topK) : ids;
}

// One token from `logits` (a row of V floats): greedy when temperature <= 0, else seeded from `rng`.
export function sample(logits, { temperature = 0, topK = 0 } = {}, rng = null) {
  if (!(temperature > 0)) return argmax(logits);
  const ids = candidates(logits, topK);
  const top = logits[ids[0]];
  const weights = ids.map((id) => Math.exp((logits[id] - top) / temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  const threshold = rng.uniform() * total;
  let sum = 0;
  for (let i = 0; i < ids.length; i++) {
    sum += weights[i];
    if (sum > threshold) return ids[i];
  }
  return ids[ids.length - 1];
}
