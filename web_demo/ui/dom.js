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

// Whether the worker controlling the page retired (another site's or build's: sw.js), asked with a bound.
function retired(worker, timeoutMs = 3000) {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve(false), timeoutMs);
    channel.port1.onmessage = (event) => {
      clearTimeout(timer);
      resolve(Boolean(event.data && event.data.retired));
    };
    worker.postMessage({ type: 'edgetool-retired?' }, [channel.port2]);
  });
}

// Register the service worker and resolve (bounded) once this site's worker controls the page: the wasm build an
// engine then fetches goes through it and is kept for offline use (sw.js caches the builds on first use), instead of
// being downloaded twice. The worker controlling the page at load is not always this site's: after another site (or
// another build) on this origin, that one's worker served this navigation and retired (sw.js), passing requests
// through, while this site's worker installs; an engine loaded through the retired one would not work offline. So
// the page waits for the worker register() says is coming, or asks its controller whether it retired and then waits
// for the update to this site's worker. Resolves to whether the page is controlled; the footer's pill says when the
// page works offline.
export function startServiceWorker(timeoutMs = SW_WAIT_MS) {
  if (!('serviceWorker' in navigator)) return Promise.resolve(false);
  const sw = navigator.serviceWorker;
  sw.ready.then(() => {
    $('offline').textContent = 'available offline';
    $('offline').classList.add('ok');
  });
  return new Promise((resolve) => {
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      resolve(Boolean(sw.controller));
    };
    sw.addEventListener('controllerchange', done, { once: true });
    let timer = setTimeout(done, timeoutMs);
    // A worker being installed downloads the site (the model's weights) before it controls the page: say how far it
    // is, and keep waiting while bytes arrive (a 400 MB model takes longer than the bound on a slow link).
    sw.addEventListener('message', (event) => {
      const msg = event.data || {};
      if (msg.type !== 'edgetool-precache' || settled) return;
      clearTimeout(timer);
      timer = setTimeout(done, timeoutMs);
      setStatus(precacheText(msg.received, msg.total));
    });
    const watch = (coming) => {
      if (coming) coming.addEventListener('statechange', () => { if (coming.state === 'redundant') done(); });
    };
    sw.register('sw.js').then(async (reg) => {
      const coming = reg.installing || reg.waiting;
      if (coming) { watch(coming); return; }
      if (!sw.controller || !(await retired(sw.controller))) { done(); return; } // this site's own worker already
      reg.addEventListener('updatefound', () => watch(reg.installing));
      watch(reg.installing || reg.waiting); // it may have started while the page asked
      reg.update().catch(() => done()); // the retired worker asked for it too: this site's worker claims the page
    }, (err) => {
      console.warn('service worker registration failed:', err);
      done();
    });
  });
}
