// window.edgetool: the page's API for tests, benchmarks and embedders (docs/demo.md). Every call waits for start-up.
//
//   ready                     resolves to {backend, backends, benchmark, picked, runtime, engine, engines, enginePick,
//                             litert} when warm (picked: 'benchmark' | 'remembered' | 'query', see
//                             engines/pick-cache.js; enginePick: {picked (or 'only'), bench: {engine: ms}};
//                             litert: the LiteRT.js wasm build {build, threads, reason, relaxedSimd, threadsSupported})
//   predict(values, shape)    one-input models; predict({inputName: values | {values, shape}}) for any model ->
//                             {probabilities, top: [{label, probability}], outputs: {head: {shape, values}}, ms,
//                              backend, engine}; per task (config.task): multilabel -> independent probabilities
//                             (no softmax), segmentation/regression -> probabilities null, top [] (the page draws
//                             the mask / names the numbers; a shown mask adds mask: {height, width, classes})
//   setBackend(name)          a tfjs backend ('wasm' | 'webgl' | 'cpu'), benchmarked on the way; -> the backend now
//                             active (an Error on LiteRT.js-only sites: no backend choice)
//   setEngine(name)           'tfjs' | 'litert' | 'litert-fp32' (sites built with --litert) -> name
//   timeInference(runs, warmup)  model execution only (input already resident, output read back to synchronise)
//                             -> {backend, engine, times: [ms]}
//   backend, backends, engine, engines, benchmark, config, runtime, timings: read-only views of the page's state
//   lastInput                 the feeds the page's own input (pad, upload, camera, form) last sent to the model:
//                             {inputName: {values, shape}}, the values exactly as fed (what the preview shows)
//   lastResult                the last result the page computed (from its input or from predict())

// page: main.js's controller (ready, predict, setBackend, setEngine, timeInference and the views above, backend too).
export function createApi(page) {
  const { ready } = page;
  return {
    ready,
    predict: async (values, shape) => { await ready; return page.predict(values, shape); },
    setBackend: async (name) => { await ready; return page.setBackend(name); },
    setEngine: async (name) => { await ready; return page.setEngine(name); },
    timeInference: async (runs = 30, warmup = 1) => { await ready; return page.timeInference(runs, warmup); },
    get backend() { return page.backend; },
    get backends() { return page.backends; },
    get engine() { return page.engine; },
    get engines() { return page.engines; },
    get benchmark() { return page.benchmark; },
    get config() { return page.config; },
    get runtime() { return page.runtime; },
    get timings() { return page.timings; },
    get lastInput() { return page.lastInput; },
    get lastResult() { return page.lastResult; },
  };
}
