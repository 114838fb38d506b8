// Small DOM helpers shared by the page's UI modules. Text from model files is only ever set with textContent.

export const $ = (id) => document.getElementById(id);

export function setStatus(text, isError = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', isError);
}

export const option = (value, text) => Object.assign(document.createElement('option'), { value, textContent: text });

// An element with a class name and text (textContent: labels and names are data, never markup).
export function textElement(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  el.textContent = text;
  return el;
}

const MB = 1e6;

// "Downloading for offline use: 12.3 of 404.2 MB (3 %)", the first visit's progress line.
export function precacheText(received, total) {
  const part = total > 0 ? ` (${Math.min(100, Math.floor((100 * received) / total))} %)` : '';
  return `Downloading the model for offline use: ${(received / MB).toFixed(1)} of ${(total / MB).toFixed(1)} MB${part}`;
}

// How long the page waits for its first service worker to take control before loading the engines without it.
const SW_WAIT_MS = 20000;

// Register the service worker and resolve (bounded) once it controls the page: the wasm build an engine then fetches
// goes through it and is kept for offline use (sw.js caches the builds on first use), instead of being downloaded
// twice. Resolves to whether the page is controlled; the footer's pill says when the page works offline.
export function startServiceWorker(timeoutMs = SW_WAIT_MS) {
  if (!('serviceWorker' in navigator)) return Promise.resolve(false);
  const sw = navigator.serviceWorker;
  sw.ready.then(() => {
    $('offline').textContent = 'available offline';
    $('offline').classList.add('ok');
  });
  return new Promise((resolve) => {
    const done = () => resolve(Boolean(sw.controller));
    if (sw.controller) done(); // a return visit: already served by it (register() still checks for an update)
    sw.addEventListener('controllerchange', done, { once: true });
    let timer = setTimeout(done, timeoutMs);
    // A first visit's worker downloads the site (the model's weights) before it controls the page: say how far it
    // is, and keep waiting while bytes arrive (a 400 MB model takes longer than the bound on a slow link).
    sw.addEventListener('message', (event) => {
      const msg = event.data || {};
      if (msg.type !== 'edgetool-precache' || sw.controller) return;
      clearTimeout(timer);
      timer = setTimeout(done, timeoutMs);
      setStatus(precacheText(msg.received, msg.total));
    });
    sw.register('sw.js').then((reg) => {
      const coming = reg.installing || reg.waiting;
      if (!coming) { done(); return; } // active but not controlling (a hard reload): it will not claim this page
      coming.addEventListener('statechange', () => { if (coming.state === 'redundant') done(); });
    }, (err) => {
      console.warn('service worker registration failed:', err);
      done();
    });
  });
}
