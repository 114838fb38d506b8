// The byte-level tokenizer of edgetool's LM contract (docs/lm.md): ids 0..255 are the text's UTF-8 bytes, the
// specials (bos, eos, pad, ...) come after. The prompt is [bos, ...bytes]; specials never show as text. Pure.

// Prompt text -> ids: bos, then the UTF-8 bytes.
export function encode(text, bosId) {
  return [bosId, ...new TextEncoder().encode(text)];
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
