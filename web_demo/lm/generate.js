// Token generation with a LiteRT.js CompiledModel that follows edgetool's LM contract (docs/lm.md): the prompt goes
// through the `prefill_<T>` signatures in chunks, then one `decode` call per token; each call's output caches are
// the next call's input caches (they stay LiteRT.js tensors: never copied to JS). The chunking rule is
// edge_tool.lm.session's, the loop edge_tool.lm.generate.stream's and the sampler the shared one (lm/sampler.js), so
// the page's tokens are the native ones.
import { sample, xorshift32 } from './sampler.js';
import { minstdRand, sampleLitertLm } from './sampler_litertlm.js';

// The sampler kinds (edge_tool.lm.sampler_kinds): {rng(seed), pick(logits, sampler, rng)} by edgetool_lm.json's name.
export const SAMPLERS = {
  xorshift32: { rng: xorshift32, pick: sample },
  'litert-lm': { rng: minstdRand, pick: sampleLitertLm },
};

// The next call for `remaining` prompt tokens at position `pos` (edge_tool.lm.session.LmSession.feed's rule):
// the longest prefill the tokens fill that fits below maxLen; else the shortest that holds them all, padded; else
// decode, one token. `prefill`: [{name, length}] by length.
export function planChunk(remaining, pos, prefill, maxLen) {
  const room = maxLen - pos;
  const whole = prefill.filter((s) => s.length <= Math.min(remaining, room));
  if (whole.length) {
    const s = whole[whole.length - 1];
    return { name: s.name, length: s.length, count: s.length };
  }
  const padded = prefill.find((s) => remaining < s.length && s.length <= room);
  if (padded) return { name: padded.name, length: padded.length, count: remaining };
  return { name: 'decode', length: 1, count: 1 };
}

// One model call: `chunk` tokens at positions pos.., padded to the signature's length (pad id, positions going on);
// the caches are replaced by the outputs; returns the logits row of the chunk's last token (Float32Array).
async function call(state, plan, chunk) {
  const { model, Tensor, lm } = state;
  const tokens = new Int32Array(plan.length).fill(lm.padId);
  tokens.set(chunk);
  const positions = Int32Array.from({ length: plan.length }, (_, i) => state.pos + i); // planChunk: fits
  const fed = [new Tensor(tokens, [1, plan.length]), new Tensor(positions, [plan.length])];
  let out = null;
  try {
    out = await model.run(plan.name, { tokens: fed[0], input_pos: fed[1], ...state.caches });
  } finally {
    for (const t of fed) t.delete();
  }
  for (const name of lm.caches) {
    state.caches[name].delete();
    state.caches[name] = out[name];
  }
  const all = await out.logits.data();
  out.logits.delete();
  const v = lm.vocabSize;
  state.pos += plan.count;
  return Float32Array.from(all.subarray((plan.count - 1) * v, plan.count * v));
}

// Generate after `ids` (the encoded prompt). options: {maxNew, temperature, topK, seed}; hooks: {onToken(id),
// stopped() -> bool, pause() -> Promise (lets a stop message in)}. -> {tokens, reason, ttftMs, prefillMs,
// decodeMs, decodeSteps, stepMs (each decode call)}: reason 'stop token' | 'max tokens' | 'context full' | 'stopped'.
export async function generate(model, Tensor, lm, ids, options, hooks = {}) {
  if (ids.length > lm.maxLen) {
    throw new Error(`the prompt is ${ids.length} tokens; this model holds ${lm.maxLen} in all (shorten the prompt)`);
  }
  const size = lm.cacheShape.reduce((a, b) => a * b, 1);
  const state = { model, Tensor, lm, pos: 0, caches: {} };
  for (const name of lm.caches) state.caches[name] = new Tensor(new Float32Array(size), lm.cacheShape);
  const kind = SAMPLERS[options.kind || 'xorshift32'];
  if (!kind) throw new Error(`sampler kind ${options.kind} is not one of ${Object.keys(SAMPLERS).join(', ')}`);
  const rng = kind.rng(options.seed || 0);
  const sampler = { temperature: options.temperature || 0, topK: options.topK || 0 };
  const start = performance.now();
  const result = { tokens: [], reason: 'max tokens', ttftMs: 0, prefillMs: 0, decodeMs: 0, decodeSteps: 0, stepMs: [] };
  try {
    let logits = null;
    while (state.pos < ids.length) {
      const plan = planChunk(ids.length - state.pos, state.pos, lm.prefill, lm.maxLen);
      logits = await call(state, plan, ids.slice(state.pos, state.pos + plan.count));
    }
    result.prefillMs = performance.now() - start;
    while (result.tokens.length < options.maxNew) {
      const id = kind.pick(logits, sampler, rng);
      result.tokens.push(id);
      if (result.tokens.length === 1) result.ttftMs = performance.now() - start;
      if (hooks.onToken) hooks.onToken(id);
      if (lm.stopIds.includes(id)) { result.reason = 'stop token'; break; }
      if (result.tokens.length >= options.maxNew) break;
      if (state.pos >= lm.maxLen) { result.reason = 'context full'; break; }
      if (hooks.pause) await hooks.pause();
      if (hooks.stopped && hooks.stopped()) { result.reason = 'stopped'; break; }
      const t = performance.now();
      logits = await call(state, { name: lm.decode, length: 1, count: 1 }, [id]);
      result.stepMs.push(performance.now() - t);
      result.decodeMs += result.stepMs[result.stepMs.length - 1];
      result.decodeSteps += 1;
    }
  } finally {
    for (const t of Object.values(state.caches)) t.delete();
  }
  return result;
}
