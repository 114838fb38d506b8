// node --test: LiteRT.js's log lines by severity (web_demo/engines/litert-log.js). Run by tests/test_page_js.py.
import assert from 'node:assert/strict';
import test from 'node:test';

import { logHandlers, logMethod } from '../../web_demo/engines/litert-log.js';

test('INFO and WARNING lines of a normal load are not errors; errors and unknown lines stay errors', () => {
  assert.equal(logMethod('INFO: [environment.cc:36] Creating LiteRT environment with options'), 'debug');
  assert.equal(logMethod('INFO: Created TensorFlow Lite XNNPACK delegate for CPU.'), 'debug');
  assert.equal(logMethod('WARNING: [npu_registry.cc:34] NPU accelerator could not be loaded'), 'info');
  assert.equal(logMethod('ERROR: [compiled_model.cc:90] Failed to build'), 'error');
  assert.equal(logMethod('Aborted(OOM)'), 'error');
  assert.equal(logMethod('INFORMATION: not a level'), 'error');
});

test('the handlers log through the console method of each line, prefixed', () => {
  const seen = [];
  const con = Object.fromEntries(['debug', 'info', 'error'].map((m) => [m, (...a) => seen.push([m, a.join(' ')])]));
  const { print, printErr } = logHandlers(con);
  printErr('INFO: [cpu_registry.cc:75] XNNPACK CPU accelerator registered.');
  printErr('ERROR: boom');
  print('hello');
  assert.deepEqual(seen, [['debug', 'LiteRT.js: INFO: [cpu_registry.cc:75] XNNPACK CPU accelerator registered.'],
    ['error', 'LiteRT.js: ERROR: boom'], ['debug', 'LiteRT.js: hello']]);
});
