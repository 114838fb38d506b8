// Service worker of an edgetool demo site (generated: do not edit; rebuild with `edgetool demo`).
// Precaches every file of the site; cache-first; a new build gets a new cache and the old one is deleted.
'use strict';

const VERSION = '__VERSION__';
const PREFIX = `edgetool-demo:${self.registration.scope}:`;
const CACHE = PREFIX + VERSION;
const PRECACHE = __PRECACHE__;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE)
      .then((cache) => cache.addAll(PRECACHE.map((url) => new Request(url, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith(PREFIX) && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

// caches.match with cacheName never (re)creates a cache, so a worker being replaced cannot resurrect its old one.
async function cacheFirst(request, url) {
  const options = { cacheName: CACHE, ignoreSearch: true };
  let hit = await caches.match(request, options);
  if (!hit && (request.mode === 'navigate' || url.pathname.endsWith('/'))) {
    hit = await caches.match(new URL('index.html', self.registration.scope).href, options);
  }
  return hit || fetch(request);
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  event.respondWith(cacheFirst(request, url));
});
