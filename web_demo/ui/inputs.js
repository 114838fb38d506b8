// Every input's UI, by kind (config.js / edge_tool/demo/model.py): the drawing pad / upload / camera for the first
// image input, a WAV upload for a waveform, a note for video, a form for the others. One reader for all of them.
import { imageInputOf } from '../config.js';
import { createAudioInput, videoNote } from './audio.js';
import { $, setStatus } from './dom.js';
import { readFields, setupForm } from './form.js';
import { createPad, PROMPTS } from './pad.js';

const NOT_FORM = new Set(['audio', 'video']);

// config: the page config; onInput(): something new to predict; onClear(): the image was cleared.
// -> {read(): feeds or null (nothing given yet), show(feeds), prompt, inputCanvas()}
export function setupInputs(config, { onInput, onClear }) {
  const imageInput = imageInputOf(config);
  const formInputs = config.inputs.filter((inp) => inp !== imageInput && !NOT_FORM.has(inp.kind));
  setupForm(formInputs, config.inputs.length > 1, onInput);
  const pad = imageInput && createPad(imageInput, config.draw, {
    onInput,
    onClear: () => { onClear(); setStatus(PROMPTS.draw); },
  });
  const audio = config.inputs.filter((inp) => inp.kind === 'audio')
    .map((inp) => createAudioInput(inp, config.sampleRate || null, onInput));
  config.inputs.filter((inp) => inp.kind === 'video').forEach(videoNote);
  const parts = [...(pad ? [pad] : []), ...audio];
  const prompt = pad ? PROMPTS[pad.style] : (audio.length ? 'Upload a recording.' : '');
  return {
    prompt,
    // the form's values plus every other input's; null while one of those has nothing yet
    read() {
      const feeds = readFields(formInputs);
      for (const part of parts) {
        const more = part.read();
        if (!more) return null;
        Object.assign(feeds, more);
      }
      return feeds;
    },
    show: (feeds) => parts.forEach((part) => part.show(feeds)),
    inputCanvas: () => (pad ? $('preview') : null),
  };
}
