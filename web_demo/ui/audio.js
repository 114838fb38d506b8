// A waveform input ([batch, samples] float): a WAV (or any audio the browser decodes) upload, decoded with WebAudio's
// decodeAudioData straight at the model's sample rate (demo-config.json's sampleRate, `edgetool demo --sample-rate`;
// the browser resamples), mixed down to mono, cut or zero-padded to the model's length, and drawn as a waveform.
// Without a recorded rate the page cannot know what the model expects, so it refuses uploads and says why.
// A video input ([batch, frames, H, W, C]) gets a note: the page has no video input (window.edgetool.predict takes it).
import { $, setStatus } from './dom.js';

// The mono mix of an AudioBuffer's channels, fitted to `samples` values (cut, or zero-padded at the end).
export function fitSamples(channels, samples) {
  const out = new Float32Array(samples);
  const n = Math.min(samples, channels[0].length);
  for (const ch of channels) for (let i = 0; i < n; i++) out[i] += ch[i] / channels.length;
  return out;
}

function drawWaveform(canvas, values) {
  const ctx = canvas.getContext('2d');
  const { width: w, height: h } = canvas;
  ctx.fillStyle = '#0b1220';
  ctx.fillRect(0, 0, w, h);
  ctx.strokeStyle = '#38bdf8';
  ctx.beginPath();
  const step = values.length / w;
  for (let x = 0; x < w; x++) { // each column: the min..max of its samples
    let lo = Infinity; let hi = -Infinity;
    for (let i = Math.floor(x * step); i < Math.max(Math.floor((x + 1) * step), Math.floor(x * step) + 1); i++) {
      lo = Math.min(lo, values[i]); hi = Math.max(hi, values[i]);
    }
    ctx.moveTo(x + 0.5, h / 2 - Math.max(-1, Math.min(1, hi)) * h / 2);
    ctx.lineTo(x + 0.5, h / 2 - Math.max(-1, Math.min(1, lo)) * h / 2 + 1);
  }
  ctx.stroke();
}

function element(tag, props = {}) {
  return Object.assign(document.createElement(tag), props);
}

// inp: the config's audio input; rate: Hz (null: unknown); onInput(): a new waveform to predict.
// -> {read(): {name: {values, shape}} or null (nothing uploaded yet), show(feeds)}
export function createAudioInput(inp, rate, onInput) {
  const samples = inp.feedShape[1];
  const state = { values: null };
  const box = element('div', { id: 'audio-input', className: 'audio' });
  const file = element('input', { type: 'file', id: 'audio-file', accept: 'audio/wav,audio/*,.wav' });
  const canvas = element('canvas', { id: 'waveform', width: 480, height: 96 });
  canvas.setAttribute('aria-label', 'waveform of what the model hears');
  const note = element('p', { className: 'hint', id: 'audio-note' });
  const secs = rate ? ` (${(samples / rate).toFixed(2)} s at ${rate} Hz)` : '';
  note.textContent = rate
    ? `Upload a WAV file: it is decoded and resampled to ${rate} Hz, mixed to mono, and cut or padded to ${samples} samples${secs}.`
    : `This model takes ${samples} audio samples, but the site does not record their sample rate, so the page cannot `
      + 'resample a recording to it. Rebuild the site with `edgetool demo ... --sample-rate HZ`, or feed samples '
      + 'with window.edgetool.predict().';
  file.disabled = !rate;
  const label = element('label', { className: 'button', htmlFor: 'audio-file', textContent: 'Upload audio' });
  file.className = 'visually-hidden';
  box.append(note, element('div', { className: 'row' }), canvas);
  box.children[1].append(label, file);
  $('input-card').append(box);

  file.addEventListener('change', async () => {
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    try {
      const ctx = new OfflineAudioContext(1, samples, rate);
      const decoded = await ctx.decodeAudioData(await chosen.arrayBuffer());
      const channels = Array.from({ length: decoded.numberOfChannels }, (_, c) => decoded.getChannelData(c));
      state.values = fitSamples(channels, samples);
      drawWaveform(canvas, state.values);
      onInput();
    } catch (err) {
      setStatus(`Could not decode ${chosen.name}: ${err.message || err}`, true);
    }
  });

  return {
    read: () => (state.values ? { [inp.name]: { values: state.values, shape: [1, samples] } } : null),
    show(feeds) {
      const feed = feeds[inp.name];
      if (feed && feed.shape[0] === 1) drawWaveform(canvas, Array.from(feed.values));
    },
  };
}

// A video input: a note instead of a form of thousands of values.
export function videoNote(inp) {
  const note = element('p', { className: 'hint', id: 'video-note' });
  note.textContent = `This model takes video (${inp.name}: [${inp.shape.map((d) => (d === null ? '?' : d)).join(',')}]: `
    + 'frames of images). The page has no video input; feed frames with window.edgetool.predict({'
    + `${inp.name}: values}) (${inp.features} values per sample, row-major).`;
  $('input-card').append(note);
}
