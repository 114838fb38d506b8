// The `litert-lm` sampler kind (edge_tool/lm/sampling_litertlm.py is the Python side; docs/lm.md "Sampling"):
// LiteRT-LM 0.18's CPU sampler, so that the page draws what LiteRT-LM's engine draws from the same logits and seed.
// Pure: tests/test_lm_page_js.py runs it in Node against the Python module.
//
//   generator: libc++'s minstd_rand, x <- 48271 x mod (2^31 - 1), first state (seed mod 2^64) mod m (0 becomes 1);
//     uniform(c) = c * ((g1 - 1) + (g2 - 1) R) / R^2 with R = 2^31 - 2 (two draws).
//   candidates: the k ids with the largest logits, highest first (lowest id on ties); k 1 is greedy, draws nothing.
//   float32 softmax: expf((logit - max) / max(t, FLT_EPSILON)), summed in candidate order, each times
//     float32(1 / sum); top-p (1.0 here): the running float64 sum up to the first >= p; the token is the first
//     kept candidate whose running sum is >= u = uniform(that sum).
import { argmax, candidates } from './sampler.js';

const MODULUS = 2147483647;
const RANGE = MODULUS - 1;
const FLT_EPSILON = 2 ** -23;
export const MAX_K = 1024; // above it LiteRT-LM orders candidates by std::nth_element, not reproduced here

// A minstd_rand stream: {next(): [1, 2^31 - 2], uniform(upper): [0, upper)}.
export function minstdRand(seed) {
  let x = Number(BigInt.asUintN(64, BigInt(seed)) % BigInt(MODULUS)) || 1;
  const next = () => { x = (x * 48271) % MODULUS; return x; }; // < 2^47: exact in a double
  const uniform = (upper = 1) => {
    const low = next() - 1;
    const high = next() - 1;
    return upper * ((low + high * RANGE) / (RANGE * RANGE)) + 0;
  };
  return { next, uniform };
}

// LiteRT-LM's float32 probabilities of `ids` (candidates, highest logit first) at `temperature`.
export function probabilities(logits, ids, temperature) {
  const t = Math.fround(Math.max(Math.fround(temperature), FLT_EPSILON));
  const top = logits[ids[0]];
  const exps = ids.map((id) => Math.fround(Math.exp(Math.fround(Math.fround(logits[id] - top) / t))));
  let total = 0;
  for (const e of exps) total = Math.fround(total + e);
  if (!Number.isFinite(total)) return exps.map((_, i) => (i === 0 ? 1 : 0));
  const inv = Math.fround(1 / total);
  return exps.map((e) => Math.fround(e * inv));
}

// One token from `logits` (a Float32Array row) as LiteRT-LM picks it: topK 0 is the whole vocabulary; topP 1.
export function sampleLitertLm(logits, { temperature = 0, topK = 0, topP = 1 } = {}, rng) {
  const k = Math.min(topK || logits.length, logits.length);
  if (k > MAX_K) throw new Error(`top-k ${k} > ${MAX_K}: LiteRT-LM's candidate order there is not reproduced`);
  if (k === 1) return argmax(logits);
  const ids = candidates(logits, k);
  const probs = probabilities(logits, ids, temperature);
  const p = Math.fround(topP);
  let cumulative = 0;
  let kept = 0;
  for (const q of probs) {
    cumulative += q;
    kept += 1;
    if (cumulative >= p) break;
  }
  if (cumulative <= Number.EPSILON) return ids[0];
  const u = rng.uniform(cumulative);
  let running = 0;
  for (let i = 0; i < kept; i++) {
    running += probs[i];
    if (u <= running) return ids[i];
  }
  return ids[kept - 1];
}
