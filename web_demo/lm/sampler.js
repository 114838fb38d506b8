// The sampler every edgetool runtime shares (docs/lm.md "Sampling that every runtime reproduces";
// edge_tool/lm/sampling.py is the Python side), so that the page, the native interpreter and the board pick the same
// tokens from the same logits. Pure: tests/test_lm_page_js.py runs it in Node against the Python module.
//
//   xorshift32 (13, 17, 5), first state mix32(seed): the splitmix32 finaliser of seed + 0x9E3779B9 (a zero result
//     becomes 0x6D2B79F5); uniform() = (x >>> 8) / 2^24.
//   greedy (temperature 0): argmax, the lowest id on ties; draws no number.
//   seeded: the candidates are the ids by logit, highest first (lowest id on ties), cut to top_k (0: all); their
//     weights exp((logit - max) / temperature) in float64, summed one by one in candidate order; one uniform u per
//     token; the token is the first candidate whose running sum exceeds u * total (the last one if none does).

// The generator's first state for `seed` (an integer; taken mod 2^32).
export function mix32(seed) {
  let z = (Number(BigInt.asUintN(32, BigInt(seed))) + 0x9e3779b9) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  z = (z ^ (z >>> 16)) >>> 0;
  return z || 0x6d2b79f5;
}

// A xorshift32 stream: {next(): uint32, uniform(): [0, 1) with 24 bits}.
export function xorshift32(seed) {
  let x = mix32(seed);
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

// One token from `logits` (a row of V floats): greedy when temperature is 0, else seeded from `rng`.
export function sample(logits, { temperature = 0, topK = 0 } = {}, rng = null) {
  if (!(temperature > 0) || !rng) return argmax(logits);
  const ids = candidates(logits, topK);
  const top = logits[ids[0]];
  const weights = ids.map((id) => Math.exp((logits[id] - top) / temperature));
  let total = 0;
  for (const w of weights) total += w;
  const threshold = rng.uniform() * total;
  let sum = 0;
  for (let i = 0; i < ids.length; i++) {
    sum += weights[i];
    if (sum > threshold) return ids[i];
  }
  return ids[ids.length - 1];
}
