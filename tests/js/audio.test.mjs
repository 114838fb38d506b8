// node --test: the waveform input's sample fitting (web_demo/ui/audio.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import { fitSamples } from '../../web_demo/ui/audio.js';

test('channels are mixed to mono, then cut or zero-padded to the model length', () => {
  const left = Float32Array.from([1, 0.5, -1]);
  const right = Float32Array.from([0, 0.5, 1]);
  assert.deepEqual(Array.from(fitSamples([left, right], 5)), [0.5, 0.5, 0, 0, 0]);
  assert.deepEqual(Array.from(fitSamples([left], 2)), [1, 0.5]);
});
