// Service worker of an edgetool demo site (generated: do not edit; rebuild with `edgetool demo`).
// Precaches what every visitor needs (the page, the model, the runtimes' scripts); the wasm builds of which a browser
// runs only one (tfjs-backend-wasm's and LiteRT.js's) are cached when first fetched, so a phone never downloads the
// builds it does not run, and the one it runs works offline after the first visit (the page waits for this worker
// to control it before it loads an engine: ui/dom.js). Cache-first, but a navigation first asks the server which
// site it serves (its sw.js), so another site on this origin shows on the first visit; a new build gets a new cache.
'use strict';

const VERSION = '__VERSION__';
const PREFIX = `edgetool-demo:${self.registration.scope}:`;
const CACHE = PREFIX + VERSION;
const PRECACHE = __PRECACHE__;
const ON_DEMAND = new Set(__ON_DEMAND__.map((path) => new URL(path, self.registration.scope).pathname));

const PRECACHE_BYTES = __PRECACHE_BYTES__;

// Every open page (not yet controlled on a first visit) is told how many of the precached bytes have arrived, so it
// can show the download of a big model instead of waiting in silence (ui/dom.js).
async function tellPages(message) {
  const pages = await self.clients.matchAll({ includeUncontrolled: true, type: 'window' });
  pages.forEach((page) => page.postMessage(message));
}

// One precached file, fetched and counted as it streams in, kept whole only once it all arrived (as cache.addAll:
// any failure fails the install, and no half file is kept).
async function precacheOne(cache, url, progress) {
  const request = new Request(url, { cache: 'reload' });
  const response = await fetch(request);
  if (!response.ok) throw new TypeError(`precache: ${url} answered ${response.status}`);
  const reader = response.body.getReader();
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    progress(value.byteLength);
  }
  const headers = new Headers(response.headers);
  headers.delete('Content-Encoding'); // the body is stored decoded
  headers.delete('Content-Length');
  await cache.put(request, new Response(new Blob(chunks), { status: response.status, headers }));
}

async function precache() {
  const cache = await caches.open(CACHE);
  let received = 0;
  let told = 0;
  const progress = (n) => {
    received += n;
    const now = Date.now();
    if (now - told < 250) return;
    told = now;
    tellPages({ type: 'edgetool-precache', received, total: PRECACHE_BYTES });
  };
  const queue = [...PRECACHE];
  const count = (url) => (url === 'sw.js' ? () => {} : progress); // PRECACHE_BYTES: every file but this one
  const worker = async () => {
    while (queue.length) {
      const url = queue.shift();
      await precacheOne(cache, url, count(url));
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  await tellPages({ type: 'edgetool-precache', received, total: PRECACHE_BYTES, done: true });
}

self.addEventListener('install', (event) => {
  event.waitUntil(precache().then(() => self.skipWaiting()));
});

// VERSION is this site's identity (a hash of every file of the build). A worker of another site (another model's
// demo served on the same port, or another build) leaves its cache behind: the pages open now were served from it
// (cache-first), so they show that other site. Its cache goes, this worker takes the pages over and loads each
// again, once, from this site. A first visit (no other cache) is not reloaded.
self.addEventListener('activate', (event) => {
  const replaced = (async () => {
    const others = (await caches.keys()).filter((k) => k.startsWith(PREFIX) && k !== CACHE);
    await Promise.all(others.map((k) => caches.delete(k)));
    await self.clients.claim();
    return others.length > 0;
  })();
  event.waitUntil(replaced);
  // After activation, not inside waitUntil: a page's navigation is a fetch this worker answers only once active.
  replaced.then(async (others) => {
    if (!others) return;
    const pages = await self.clients.matchAll({ type: 'window' });
    await Promise.all(pages.map((page) => page.navigate(page.url).catch(() => null)));
  });
});

// A file cached on first use: fetched from the network once, kept in this version's cache (only while it is
// still this worker's: a worker being replaced must not write into a cache its successor deleted).
async function fetchAndKeep(request) {
  const response = await fetch(request);
  if (response.ok && response.type === 'basic') {
    const current = await caches.has(CACHE);
    if (current) await (await caches.open(CACHE)).put(request, response.clone());
  }
  return response;
}

// caches.match with cacheName never (re)creates a cache, so a worker being replaced cannot resurrect its old one.
async function cacheFirst(request, url) {
  const options = { cacheName: CACHE, ignoreSearch: true };
  let hit = await caches.match(request, options);
  if (!hit && (request.mode === 'navigate' || url.pathname.endsWith('/'))) {
    hit = await caches.match(new URL('index.html', self.registration.scope).href, options);
  }
  if (hit) return hit;
  return ON_DEMAND.has(url.pathname) ? fetchAndKeep(request) : fetch(request);
}

// Which site the server serves now, read from its sw.js (VERSION), bounded in time; null offline or on no answer.
const CHECK_MS = 3000;
async function servedVersion() {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), CHECK_MS);
  try {
    const response = await fetch(new URL('sw.js', self.registration.scope), { cache: 'no-store', signal: abort.signal });
    if (!response.ok) return null;
    const found = /const VERSION = ["']([^"']*)["']/.exec(await response.text());
    return found ? found[1] : null;
  } catch (err) {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

// Another site on this origin now (another demo served on the same port, or a new build): this worker retires at
// the first navigation — its cache goes, it asks the browser to update its registration to the site being served
// (whose worker installs, skips waiting and claims the pages), and until then it only passes requests to the
// network, so the first visit shows the site being served. The page asks whether its controller retired
// (ui/dom.js), and then waits for the new worker before it loads an engine, so the engine is kept for offline use.
let retired = false;
async function navigate(request, url) {
  const served = retired ? null : await servedVersion();
  if (served !== null && served !== VERSION) {
    retired = true;
    await caches.delete(CACHE);
    self.registration.update().catch(() => null); // the page's register() is answered once this update is done
  }
  return retired ? fetch(request) : cacheFirst(request, url);
}

self.addEventListener('message', (event) => {
  const msg = event.data || {};
  if (msg.type === 'edgetool-retired?' && event.ports[0]) event.ports[0].postMessage({ retired });
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (retired) {
    event.respondWith(fetch(request));
  } else if (request.mode === 'navigate') {
    event.respondWith(navigate(request, url));
  } else {
    event.respondWith(cacheFirst(request, url));
  }
});
