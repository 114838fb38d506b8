// Which @litertjs/core wasm build the LiteRT.js engine loads: the fastest one this browser can run among those the
// site vendors (demo-config.json's litert.wasmBuilds: {name: script path}). Pure apart from the default `env`
// (globalThis): tests/js/litert-build.test.mjs runs it in Node with made-up environments.
//
//   compat    SIMD128 only: every browser with wasm SIMD; the fallback
//   default   relaxed SIMD (fused multiply-add, int8 dot products): Chrome/Edge 114+, Firefox 145+
//   threaded  relaxed SIMD + a pool of wasm threads: needs SharedArrayBuffer, i.e. a cross-origin isolated page
//             (`edgetool serve` sends COOP/COEP); only worth its worker pool when more than one thread is asked for

// (module (func (result v128) i32.const 1 i8x16.splat i32.const 2 i8x16.splat i8x16.relaxed_swizzle)):
// the probe @litertjs/core itself uses to choose between its builds
export const RELAXED_SIMD_PROBE = Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
  10, 15, 1, 13, 0, 65, 1, 253, 15, 65, 2, 253, 15, 253, 128, 2, 11);
// (module (memory 1 1 shared) (func i32.const 0 i32.atomic.load drop)): shared memory + atomics (also @litertjs/core's)
export const THREADS_PROBE = Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 5, 4, 1, 3,
  1, 1, 10, 11, 1, 9, 0, 65, 0, 254, 16, 2, 0, 26, 11);

function validates(env, bytes) {
  try {
    return Boolean(env.WebAssembly && env.WebAssembly.validate(bytes));
  } catch (err) {
    return false;
  }
}

// What this browser offers: {relaxedSimd, threads}. Threads need wasm shared memory, SharedArrayBuffer and a
// cross-origin isolated page (without isolation the threaded build cannot start its workers).
export function wasmFeatures(env = globalThis) {
  const threads = env.crossOriginIsolated === true && typeof env.SharedArrayBuffer === 'function'
    && validates(env, THREADS_PROBE);
  return { relaxedSimd: validates(env, RELAXED_SIMD_PROBE), threads };
}

// builds: the vendored {name: script}; features: wasmFeatures(); threads: the wasm threads wanted (>= 1);
// forced: ?litert-build=NAME (null: choose). -> {build, threads, reason}; threads is 1 unless the build is threaded.
export function chooseBuild(builds, features, threads, forced = null) {
  if (forced) {
    if (!(forced in builds)) {
      throw new Error(`LiteRT.js build ${forced} is not in this site; it has ${Object.keys(builds).join(', ')}`);
    }
    return { build: forced, threads: forced === 'threaded' ? threads : 1, reason: 'query' };
  }
  if (features.relaxedSimd && features.threads && threads > 1 && 'threaded' in builds) {
    return { build: 'threaded', threads, reason: 'relaxed SIMD, threads' };
  }
  if (features.relaxedSimd && 'default' in builds) {
    return { build: 'default', threads: 1, reason: threads > 1 ? 'relaxed SIMD (no threads here)' : 'relaxed SIMD' };
  }
  if (!('compat' in builds)) throw new Error(`no LiteRT.js build this browser can run among ${Object.keys(builds)}`);
  return { build: 'compat', threads: 1, reason: 'no relaxed SIMD' };
}
