"""In real Chromium: a first visit downloads one wasm build per runtime, and that engine works offline (issue 25 §2).

Each visit is a new browser context (no service worker, no cache yet) on a site served by `edgetool serve`; the
bytes are counted where they leave the server (Content-Length of every 200 answer: gzip when the browser accepts it,
as static hosts do). Then the network goes away, the page reloads from the service worker alone and predicts like
TensorFlow / the .tflite run natively.
"""

from __future__ import annotations

import json
import re
import threading

import pytest

from edge_tool.demo.serve import start_server
from edge_tool.webserver.handler import SiteRequestHandler
from tests.test_browser import (
    CHROMIUM,
    FLAGS,
    NO_RELAXED_SIMD,
    _assert_matches_native_and_tf,
    _assert_matches_tf,
    _native_litert,
    _predict_all,
    _require_chromium,
    _wait_for,
    _wasm_of,
    samples,  # noqa: F401  (a fixture)
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

FIRST_VISIT_BUDGET = 12e6  # bytes: issue 25's goal for a --litert site running one engine
OFFLINE_SAMPLES = 8


@pytest.fixture(scope="module")
def browser():
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def served():
    """serve(site) -> (url, sent): `edgetool serve` on its own port; sent lists (path, bytes) of every 200 answer."""
    sent, lock, servers = {}, threading.Lock(), []
    original = SiteRequestHandler.send_header

    def counting(self, name, value):  # the real handler, observed: what each answer's body weighs on the wire
        if name == "Content-Length" and getattr(self, "_status", None) == 200:
            with lock:
                sent.setdefault(self.server.server_address[1], []).append((self.path, int(value)))
        return original(self, name, value)

    def send_response(self, code, message=None):
        self._status = code
        return original_send_response(self, code, message)

    original_send_response = SiteRequestHandler.send_response
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SiteRequestHandler, "send_header", counting)
        mp.setattr(SiteRequestHandler, "send_response", send_response)

        def _serve(site):
            server, thread, url = start_server(site, "127.0.0.1", 0)
            servers.append((server, thread))
            return url, sent.setdefault(server.server_address[1], [])

        yield _serve
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join(5)


@pytest.fixture(scope="module")
def tfjs_site(digits_demo_site):
    return digits_demo_site


@pytest.fixture(scope="module")
def litert_site(digits_litert_site):
    return digits_litert_site


def _first_visit_then_offline(browser, url, sent, query, init, x):
    """One visit on a fresh profile, then an offline reload: (ready online, ready offline, bytes, wasm paths, probs)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        if init:
            page.add_init_script(init)
        page.goto(url + query)
        info = page.evaluate("window.edgetool.ready")
        # the page waited for its service worker before loading an engine: every wasm build went through it
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        first = sum(n for _, n in sent)
        wasm = sorted(path for path, _ in sent if path.endswith(".wasm"))
        cached = (
            "(want) => caches.keys().then((k) => caches.open(k[0])).then((c) => c.keys()).then((r) => "
            "JSON.stringify(r.map((q) => new URL(q.url).pathname).filter((p) => p.endsWith('.wasm')).sort())"
            " === JSON.stringify(want))"
        )
        _wait_for(page, cached, wasm, 30)  # kept for offline use: exactly the builds this visit ran
        context.set_offline(True)
        page.reload()
        offline = page.evaluate("window.edgetool.ready")
        probe = "fetch('offline-probe.txt', {cache: 'no-store'}).then(() => 'network', () => 'offline')"
        assert page.evaluate(probe) == "offline"
        probs, results = _predict_all(page, x)
        return info, offline, first, wasm, probs, results
    finally:
        context.close()


def test_tfjs_site_first_visit_and_offline(browser, served, tfjs_site, samples):
    url, sent = served(tfjs_site)
    x, probs_tf = samples[0][:OFFLINE_SAMPLES], samples[1][:OFFLINE_SAMPLES]
    info, offline, first, wasm, probs, results = _first_visit_then_offline(browser, url, sent, "?backend=wasm", None, x)
    assert info["backend"] == offline["backend"] == "wasm"
    assert wasm == ["/vendor/tfjs-backend-wasm-threaded-simd.wasm"]  # isolated page: the threaded SIMD binary only
    assert first < 3e6, first
    assert {r["engine"] for r in results} == {"tfjs"}
    _assert_matches_tf(probs, probs_tf)


@pytest.mark.parametrize(
    ("query", "init", "build"),
    [
        ("", None, None),  # the auto-pick: whichever build the page chooses here
        ("?engine=litert&threads=1", None, "default"),
        ("?engine=litert&threads=2", None, "threaded"),
        ("?engine=litert", NO_RELAXED_SIMD, "compat"),
    ],
)
def test_litert_site_first_visit_fetches_one_build_and_works_offline(
    browser, served, litert_site, samples, query, init, build
):
    url, sent = served(litert_site)
    sent.clear()
    x, probs_tf = samples[0][:OFFLINE_SAMPLES], samples[1][:OFFLINE_SAMPLES]
    info, offline, first, wasm, probs, results = _first_visit_then_offline(browser, url, sent, query, init, x)
    build = build or info["litert"]["build"]
    assert info["litert"]["build"] == offline["litert"]["build"] == build
    litert_wasm = [p for p in wasm if "/litert/" in p]
    assert litert_wasm == [f"/vendor/litert/{_wasm_of(build)}"], wasm  # one LiteRT.js build of three
    assert len(wasm) == 2, wasm  # and one tfjs binary of three
    print(f"first visit ({query or 'auto-pick'}, {build} build): {first / 1e6:.2f} MB")
    assert first < FIRST_VISIT_BUDGET, f"first visit downloaded {first / 1e6:.2f} MB"
    engine = offline["engine"]
    assert engine in offline["engines"] and {r["engine"] for r in results} == {engine}
    if engine == "tfjs":
        _assert_matches_tf(probs, probs_tf)
    else:
        tflite = "model-fp32-b1.tflite" if "fp32" in engine else "model-int8-b1.tflite"
        _assert_matches_native_and_tf(probs, _native_litert(litert_site / "model" / tflite, x), probs_tf)


def test_first_visit_shows_the_download_and_keeps_every_precached_byte(browser, served, tfjs_site):
    """The first visit's worker reports its download to the page (ui/dom.js shows it): the last report says done,
    with every precached byte received, as many as sw.js says (the files' sizes on disk), and they are all cached."""
    url, _ = served(tfjs_site)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.add_init_script(
            "navigator.serviceWorker.addEventListener('message', (e) => (window.__precache ||= []).push(e.data));"
        )
        page.goto(url)
        page.evaluate("window.edgetool.ready")
        _wait_for(page, "() => (window.__precache || []).some((m) => m.done)", None, 30)
        reports = page.evaluate("window.__precache")
        total = int(re.search(r"const PRECACHE_BYTES = (\d+);", (tfjs_site / "sw.js").read_text()).group(1))
        precached = json.loads(re.search(r"const PRECACHE = (\[.*?\]);", (tfjs_site / "sw.js").read_text(), re.S)[1])
        assert total == sum((tfjs_site / f).stat().st_size for f in precached if f != "sw.js")
        assert reports[-1] == {"type": "edgetool-precache", "received": total, "total": total, "done": True}
        assert [m["received"] for m in reports] == sorted(m["received"] for m in reports)
        assert "Downloading the model for offline use" in page.evaluate(
            "import('./ui/dom.js').then((m) => m.precacheText(5e6, 4e8))"
        )
        cached = "caches.keys().then((k) => caches.open(k[0])).then((c) => c.keys()).then((r) => r.length)"
        assert page.evaluate(cached) >= len(precached)
    finally:
        context.close()
