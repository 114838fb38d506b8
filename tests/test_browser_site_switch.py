"""In real Chromium: a second demo site served on the port an earlier one used shows on the first visit (issue 34).

One browser profile visits site A (`edgetool demo`, TensorFlow.js) on a port; A's service worker takes the origin
over. Then A's server stops and site B (`edgetool demo --litert`, another build) is served on the same port: the
old worker answered B's URL from A's cache (cache-first), so B used to appear only on the second visit (issue 34:
B's worker then reloaded the page, ~15 s later on a loaded machine; issue 40). Now A's worker asks the server which
site it serves (its sw.js VERSION) at each navigation: another one, and A's worker retires (its cache deleted, it
unregisters, it passes requests through), so the first load already shows B: no reload at all. And that first page
waits for B's own worker before it loads an engine (the retired one controls it at load), so B's engine was fetched
through B's worker and B works offline after that one visit (CI once caught the page ready, under A's retired
worker, with no cache of B's yet).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from edge_tool.demo.serve import start_server
from tests.test_browser import CHROMIUM, FLAGS, _require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOWS = "(want) => !!(window.edgetool && window.edgetool.config && !!window.edgetool.config.litert === want)"


def _poll(page, expression: str, arg, timeout_s: float = 120.0) -> None:
    """Poll ``expression`` until truthy; a page being reloaded meanwhile (context destroyed) is polled again."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if page.evaluate(expression, arg):
                return
        except Exception:
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {expression} ({arg})")


def _serve(site, port: int):
    server, thread, url = start_server(site, "127.0.0.1", port)
    return server, thread, url


def _stop(server, thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(5)


def _version(site) -> str:
    """The site's identity, as its service worker states it (sw.js's VERSION)."""
    return re.search(r'const VERSION = "([^"]*)"', (site / "sw.js").read_text()).group(1)


def test_a_new_site_on_the_same_port_shows_on_the_first_visit(digits_demo_site, digits_litert_site):
    _require_chromium()
    from playwright.sync_api import sync_playwright

    a_litert, b_litert = (
        bool(json.loads((s / "demo-config.json").read_text()).get("litert"))
        for s in (digits_demo_site, digits_litert_site)
    )
    assert a_litert != b_litert  # the two sites tell themselves apart in the page
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        context = browser.new_context()  # one profile for both visits: A's worker stays registered
        page = context.new_page()
        server, thread, url = _serve(digits_demo_site, 0)
        port = server.server_address[1]
        try:
            page.goto(url)
            _poll(page, SHOWS, a_litert)
            _poll(page, "() => navigator.serviceWorker.controller !== null", None)
            page.evaluate("window.edgetool.ready")
        finally:
            _stop(server, thread)
        loads: list[str] = []
        page.on("load", lambda p: loads.append(p.url))
        server, thread, url = _serve(digits_litert_site, port)
        try:
            page.goto(url)  # the first visit of B: A's worker answers it from A's cache
            _poll(page, SHOWS, b_litert)
            _poll(page, "() => window.edgetool.ready.then(() => true)", None)
            time.sleep(3)
            assert len(loads) == 1, loads  # the first load showed B: no reload was needed
            assert page.evaluate("navigator.serviceWorker.controller.scriptURL").endswith("/sw.js")
            keys = page.evaluate("caches.keys()")
            assert [k.rsplit(":", 1)[-1] for k in keys] == [_version(digits_litert_site)], keys  # only B's cache
            assert page.evaluate(SHOWS, b_litert)
            context.set_offline(True)
            try:  # B's engine came through B's worker on that first visit: B works offline now
                failed: list[str] = []
                page.on("requestfailed", lambda r: failed.append(r.url))
                page.reload()
                _poll(page, "() => window.edgetool.ready.then(() => true)", None, 60)
                assert not failed, failed  # nothing the page needs was left to the network
                probe = "fetch('offline-probe.txt', {cache: 'no-store'}).then(() => 'network', () => 'offline')"
                assert page.evaluate(probe) == "offline"
                assert page.evaluate(SHOWS, b_litert)
            finally:
                context.set_offline(False)
        finally:
            _stop(server, thread)
            browser.close()
