// LiteRT.js's wasm runtime prints its log through Emscripten's `print`/`printErr`, and printErr defaults to
// console.error: every "INFO: [environment.cc:36] Creating LiteRT environment" line of a normal load would show up as
// an error. engines/litert.js passes these handlers to the runtime instead: INFO/VERBOSE lines go to console.debug,
// WARNING lines to console.info, anything else (ERROR, FATAL, an abort's message) stays console.error.
// Pure: tests/js/litert-log.test.mjs runs it in Node with a recording console.

const LEVEL = /^(VERBOSE|DEBUG|INFO|WARNING|ERROR|FATAL)\b/;
const METHOD = { VERBOSE: 'debug', DEBUG: 'debug', INFO: 'debug', WARNING: 'info', ERROR: 'error', FATAL: 'error' };

// The console method one line of LiteRT.js's stderr belongs to.
export function logMethod(line) {
  const level = LEVEL.exec(String(line).trimStart());
  return level ? METHOD[level[1]] : 'error';
}

// {print, printErr} for the Emscripten module of LiteRT.js, logging to `con` (default: the console) with a prefix.
export function logHandlers(con = console) {
  const log = (method) => (...args) => con[method]('LiteRT.js:', args.join(' '));
  return {
    print: log('debug'),
    printErr: (...args) => log(logMethod(args.join(' ')))(...args),
  };
}
