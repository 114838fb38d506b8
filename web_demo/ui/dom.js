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

// The service worker precaches the whole site; the footer's pill says when the page works offline.
export function registerServiceWorker() {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.register('sw.js').catch((err) => console.warn('service worker registration failed:', err));
  navigator.serviceWorker.ready.then(() => {
    $('offline').textContent = 'available offline';
    $('offline').classList.add('ok');
  });
}
