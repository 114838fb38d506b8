// What every engine of the page is (engines/tfjs.js, engines/litert.js), and the pieces they share.
//
// An engine is an object with
//   name            'tfjs' | 'litert': what results and timings report as `engine`
//   label           the text of its entry in the Engine select
//   title           what the page's header and footer call it while it runs (runtime version, backend or wasm build)
//   probTolerance   how far from 1 a row of its ranked head may sum and still be taken as probabilities
//   load(mark)      fetch and compile the model (mark(name) records start-up timings); resolves when it can run
//   run(feeds)      feeds {inputName: {values, shape}} (checked by config.checkFeeds) -> the raw result
//                   {outputs: {head: {shape, values}}, ms, backend, engine}
//   time(runs, warmup)  model execution only, input already in place -> {backend, engine, times: [ms per run]}
//   dispose()       free the model (and its tensors) again
//   backend         what it computes on now ('wasm', 'webgl', 'webgpu', ...); shortName: what the status names
// An engine with a backend choice of its own (the tfjs one) also has
//   backends        {names, bench, skipped, picked}: the backends that work here and their micro-benchmark
//   choose(memory)  after load: pick its backend (remembered through memory, engines/pick.js) -> its name, warm
//   choice()        what the pick memory keeps of it ({backend, bench, skipped})
//   switchBackend(name)  switch (and benchmark) -> the backend now active
//   threads         {current, most} wasm threads (null: none), warning(best): a note for the status ('' none)
//   cacheKey        {hash, threads, gpu}: the pick memory's key parts; runtimeInfo(): what ready reports as runtime
// main.js only talks to engines through this interface (engines/load.js makes them, engines/pick.js picks one),
// and turns a raw result into what predict() returns with postprocess.withRanking.

// Run `once` warmup + runs times; the ms of each run after the warm-up ones. `once` may resolve to a clean-up
// function (e.g. disposing its output tensors), called after the clock stopped.
export async function timeLoop(once, runs, warmup) {
  const times = [];
  for (let i = 0; i < warmup + runs; i++) {
    const start = performance.now();
    const cleanUp = await once();
    const ms = performance.now() - start;
    if (typeof cleanUp === 'function') cleanUp();
    if (i >= warmup) times.push(ms);
  }
  return times;
}
