// The byte-level tokenizer of edgetool's LM contract (docs/lm.md; edge_tool.lm.generate.encode_bytes/decode_bytes):
// ids 0..255 are the text's UTF-8 bytes, the specials (bos, eos, pad, ...) come after and never show as text. Pure.
// pageTokenizer picks the model's: this one, or the BPE of its tokenizer.json (bpe.js).
import { bpeTokenizer } from './bpe.js';

// Prompt text -> ids: its UTF-8 bytes (as edge_tool.lm.generate.encode_bytes; no bos is added).
export function encode(text) {
  return Array.from(new TextEncoder().encode(text));
}

// A streaming decoder: push(id) -> the text it completes ('' while a multi-byte character is incomplete, and for
// special ids); flush() -> what is left (an incomplete character as U+FFFD).
export function byteDecoder() {
  const decoder = new TextDecoder('utf-8');
  return {
    push: (id) => (id >= 0 && id < 256 ? decoder.decode(Uint8Array.of(id), { stream: true }) : ''),
    flush: () => decoder.decode(),
  };
}

// The model's tokenizer for the page: {encode(text) -> ids, decoder()}; `doc` is the parsed tokenizer.json of a BPE.
export function pageTokenizer(lm, doc) {
  if (lm.tokenizer === 'bpe') return bpeTokenizer(doc);
  return { encode, decoder: byteDecoder };
}
