"""Open an edgetool demo site in headless Chromium and run samples through the page's ``window.edgetool.predict``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.demo.serve import start_server

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
READY_TIMEOUT_MS = 120_000

# Each sample is fed as {inputName: {values, shape}}; pages without multi-input support get (values, shape).
_PREDICT_JS = """
async ([samples, single]) => {
  const out = [];
  for (const s of samples) {
    const r = single ? await window.edgetool.predict(Object.values(s)[0].values, Object.values(s)[0].shape)
                     : await window.edgetool.predict(s);
    out.push(r.outputs ? Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, Array.from(v.values)]))
                       : { __probabilities__: Array.from(r.probabilities) });
  }
  return out;
}
"""


def predict_in_browser(site: Path, inputs: dict[str, np.ndarray]) -> dict:
    """Outputs of the page (the engine it picks itself) for each sample, keyed by output name (or {"error": ...})."""
    return predict_per_engine(site, inputs, [None])[None]


def predict_per_engine(site: Path, inputs: dict[str, np.ndarray], engines: list[str | None]) -> dict:
    """{engine: the page's outputs with ``?engine=ENGINE`` (None: the page's own pick)}, one Chromium for all."""
    if not CHROMIUM.is_file():
        return dict.fromkeys(engines, {"error": f"{CHROMIUM} missing"})
    from playwright.sync_api import sync_playwright

    n = len(next(iter(inputs.values())))
    samples = [
        {k: {"values": v[i].ravel().tolist(), "shape": [1, *v.shape[1:]]} for k, v in inputs.items()} for i in range(n)
    ]
    server, thread, url = start_server(Path(site), "127.0.0.1", 0)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
            try:
                return {e: _predict(browser, url + (f"?engine={e}" if e else ""), samples) for e in engines}
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _predict(browser, url: str, samples: list[dict]) -> dict:
    """One fresh page at ``url``: its predict() on each sample ({output: [n, ...]}), or {"error": ...}."""
    errors: list[str] = []
    page = browser.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    try:
        page.wait_for_function("window.edgetool !== undefined", timeout=READY_TIMEOUT_MS)
        page.evaluate("window.edgetool.ready")
        multi = page.evaluate("window.edgetool.config && Array.isArray(window.edgetool.config.inputs)")
        rows = page.evaluate(_PREDICT_JS, [samples, not multi])
    except Exception as exc:
        status = page.locator("#status").inner_text() if page.locator("#status").count() else ""
        return {"error": f"page failed: {status or errors[:1] or str(exc).splitlines()[0]}"[:300]}
    finally:
        page.close()
    return {k: np.asarray([r[k] for r in rows], np.float32) for k in rows[0]}
