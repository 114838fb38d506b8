// The byte-level BPE tokenizer of edgetool's LM contract (docs/lm.md; edge_tool/lm/tokenizer/bpe.py), read from the
// model's Hugging Face tokenizer.json: the special tokens split off first (their literal text is their id, as in
// HF tokenizers), then GPT-2's pre-tokenizer regex, each piece's UTF-8 bytes as GPT-2's byte symbols, then the merges
// applied lowest rank first (leftmost first on ties: HF's order). Gives exactly the Python ids
// (tests/test_lm_bpe.py checks a corpus of ASCII, accents, CJK, emoji and whitespace runs). Pure.

const SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

// GPT-2's byte -> printable character map (HF's ByteLevel pre-tokenizer and decoder use the same).
export function byteSymbols() {
  const printable = [];
  for (const [lo, hi] of [[0x21, 0x7e], [0xa1, 0xac], [0xae, 0xff]]) for (let b = lo; b <= hi; b++) printable.push(b);
  const out = new Array(256);
  let extra = 0;
  for (const b of printable) out[b] = String.fromCodePoint(b);
  for (let b = 0; b < 256; b++) if (out[b] === undefined) out[b] = String.fromCodePoint(256 + extra++);
  return out;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// A tokenizer over `doc` (tokenizer.json, parsed): {encode(text) -> ids, pieces: Uint8Array per id, decoder()}.
export function bpeTokenizer(doc) {
  const vocab = new Map(Object.entries(doc.model.vocab));
  const ranks = new Map(doc.model.merges.map((m, i) => [Array.isArray(m) ? m.join(' ') : m, i]));
  const specials = new Map((doc.added_tokens || []).map((t) => [t.content, t.id]));
  const specialSplit = specials.size
    ? new RegExp(`(${[...specials.keys()].sort((a, b) => b.length - a.length).map(escape).join('|')})`, 'u') : null;
  const symbols = byteSymbols();
  const utf8 = new TextEncoder();
  const cache = new Map();

  function merge(word) {
    const parts = Array.from(word);
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < parts.length; i++) {
        const r = ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
      }
      if (best < 0) return parts;
      parts.splice(best, 2, parts[best] + parts[best + 1]);
    }
  }

  function encodeWord(piece) {
    if (!cache.has(piece)) {
      const word = Array.from(utf8.encode(piece), (b) => symbols[b]).join('');
      cache.set(piece, merge(word).map((p) => vocab.get(p)));
    }
    return cache.get(piece);
  }

  function encode(text) {
    const ids = [];
    for (const chunk of specialSplit ? text.split(specialSplit) : [text]) {
      if (specials.has(chunk)) { ids.push(specials.get(chunk)); continue; }
      for (const m of chunk.matchAll(SPLIT)) ids.push(...encodeWord(m[0]));
    }
    return ids;
  }

  const back = new Map(symbols.map((c, b) => [c, b]));
  const size = 1 + Math.max(...vocab.values(), ...specials.values());
  const pieces = new Array(size).fill(new Uint8Array(0));
  const specialIds = new Set(specials.values());
  for (const [piece, id] of vocab) {
    if (!specialIds.has(id)) pieces[id] = Uint8Array.from(Array.from(piece), (c) => back.get(c));
  }
  // A streaming decoder: push(id) -> the text it completes (specials: ''), flush() -> what is left.
  function decoder() {
    const d = new TextDecoder('utf-8');
    return { push: (id) => (id >= 0 && id < size ? d.decode(pieces[id], { stream: true }) : ''), flush: () => d.decode() };
  }
  return { encode, pieces, decoder };
}
