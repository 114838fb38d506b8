"""In real Chromium emulating a phone (issue 25 §3): 360×740 CSS px at device scale factor 3, touch, a mobile user
agent. The page fits without horizontal scrolling, a digit drawn with real touch events (CDP Input.dispatchTouchEvent)
is classified right, an upload predicts, and the install criteria hold. Screenshots at phone and desktop size are
written to SCREENSHOTS (and test-artifacts/) for a person to look at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from edge_tool.demo.serve import start_server
from tests.edgetool_runs import edgetool_in_process
from tests.test_browser import ARTIFACTS, CHROMIUM, FLAGS, _require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SCREENSHOTS = Path("/tmp/h10")
PHONE = {
    "viewport": {"width": 360, "height": 740},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
    "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Mobile Safari/537.36",
}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
# Strokes of digits in pad fractions (0..1, y down), drawn as one touch each
DIGITS = {
    "1": [[(0.5, 0.12), (0.5, 0.88)]],
    "0": [[(0.5 + 0.26 * np.sin(t), 0.5 - 0.36 * np.cos(t)) for t in np.linspace(0, 2 * np.pi, 25)]],
    "7": [[(0.22, 0.15), (0.78, 0.15), (0.42, 0.88)]],
}


@pytest.fixture(scope="module")
def pw_driver():
    """One Playwright driver for the module (a second sync_playwright cannot start beside it)."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser(pw_driver):
    browser = pw_driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def digits_url(digits_model, tmp_path_factory):
    site = tmp_path_factory.mktemp("phone") / "site"
    proc = edgetool_in_process("demo", digits_model, "-o", site, "--title", "Digits on a phone")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    server, thread, url = start_server(site, "127.0.0.1", 0)
    yield url
    server.shutdown()
    server.server_close()
    thread.join(5)


def _open(browser, url: str, device: dict):
    context = browser.new_context(**device)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.evaluate("window.edgetool.ready")
    return context, page


def _shot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = SCREENSHOTS / name
    page.screenshot(path=str(shot), full_page=True)
    shutil.copyfile(shot, ARTIFACTS / name)
    return shot


def _fits(page) -> None:
    widths = page.evaluate(
        "({scroll: document.scrollingElement.scrollWidth, inner: innerWidth,"
        " widest: Math.max(...[...document.querySelectorAll('body *')].filter((e) =>"
        " e.getClientRects().length).map((e) => e.getBoundingClientRect().right))})"
    )
    assert widths["scroll"] <= widths["inner"], f"horizontal scrolling on a phone: {widths}"
    assert widths["widest"] <= widths["inner"] + 0.5, f"an element sticks out to the right: {widths}"


def _touch_draw(page, strokes) -> None:
    """Draw strokes (pad fractions) with real touch events: touchStart, touchMoves every few px, touchEnd."""
    cdp = page.context.new_cdp_session(page)
    box = page.locator("#pad").bounding_box()
    at = lambda fx, fy: {"x": box["x"] + fx * box["width"], "y": box["y"] + fy * box["height"]}  # noqa: E731
    for stroke in strokes:
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [at(*stroke[0])]})
        for (x0, y0), (x1, y1) in zip(stroke, stroke[1:]):
            for t in np.linspace(0, 1, 8)[1:]:
                cdp.send(
                    "Input.dispatchTouchEvent",
                    {"type": "touchMove", "touchPoints": [at(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)]},
                )
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def test_phone_layout_fits_and_desktop_too(browser, digits_url):
    for name, device in (("phone", PHONE), ("desktop", DESKTOP)):
        context, page = _open(browser, digits_url, device)
        try:
            assert page.evaluate("matchMedia('(pointer: coarse)').matches") is (name == "phone")
            _fits(page)
            if name == "phone":  # every visible control is a 44 px touch target
                small = page.evaluate(
                    "[...document.querySelectorAll('button, .button, select, .check')].filter((e) =>"
                    " e.getClientRects().length).map((e) => [e.id || e.textContent.trim(),"
                    " e.getBoundingClientRect().height]).filter(([, h]) => h < 44)"
                )
                assert not small, small
            pad = page.locator("#pad").bounding_box()
            assert pad["width"] >= 200 and pad["x"] >= 0  # a pad a finger can draw on
            _touch_draw(page, DIGITS["0"]) if name == "phone" else None
            if name == "phone":
                page.wait_for_function("document.querySelectorAll('#top li').length === 3")
            _fits(page)  # with a result shown too
            _shot(page, f"{name}-digits.png")
            page.evaluate("document.querySelector('h1').textContent = 'a_model_directory_name_'.repeat(4)")
            _fits(page)  # a long title without spaces (the default is the model's directory name) wraps
            assert not page.errors, page.errors
        finally:
            context.close()


@pytest.mark.parametrize("digit", sorted(DIGITS))
def test_a_digit_drawn_with_touch_is_classified_right(browser, digits_url, digit):
    context, page = _open(browser, digits_url, PHONE)
    try:
        _touch_draw(page, DIGITS[digit])
        page.wait_for_function("document.querySelectorAll('#top li').length === 3")
        page.wait_for_function("window.edgetool.lastResult !== null")
        result = page.evaluate("window.edgetool.lastResult")
        fed = page.evaluate(
            "(() => { const f = Object.values(window.edgetool.lastInput)[0];"
            " return {shape: f.shape, values: Array.from(f.values)}; })()"
        )
        assert fed["shape"] == page.evaluate("[1, ...window.edgetool.config.input.shape.slice(1)]")
        labels = page.evaluate("window.edgetool.config.labels") or [str(i) for i in range(10)]
        top = labels[int(np.argmax(result["probabilities"]))]
        assert top == digit, (top, result["probabilities"])
        assert page.locator("#top li .label").first.inner_text() == top
        # the page's result is the model's answer for what it fed: predict() on the same values agrees
        again = page.evaluate("(v) => window.edgetool.predict(v)", fed["values"])
        np.testing.assert_allclose(again["probabilities"], result["probabilities"], atol=1e-6)
    finally:
        context.close()


def test_upload_works_on_a_phone(browser, digits_url, digits_model, tmp_path):
    """A phone photo of a digit (large, dark ink on light paper): uploaded, resampled to the model's 8×8, predicted."""
    from PIL import Image

    data = np.load(digits_model / "eval.npz")
    x, y = data["x"], data["y"]
    index = int(np.flatnonzero(y == 3)[0])
    ink = np.asarray(x[index, ..., 0], np.float64) / max(float(x[index].max()), 1e-9)
    photo = Image.fromarray((255 - 255 * ink).round().astype(np.uint8)).resize((480, 480), Image.BICUBIC)
    path = tmp_path / "digit.png"
    photo.convert("RGB").save(path)
    context, page = _open(browser, digits_url, PHONE)
    try:
        page.check("#invert")  # dark ink on light paper: the model wants bright on dark
        page.set_input_files("#file", str(path))
        page.wait_for_function(
            "window.edgetool.lastInput !== null && document.querySelectorAll('#top li').length === 3"
        )
        fed = page.evaluate("Object.values(window.edgetool.lastInput)[0].shape")
        assert fed == page.evaluate("[1, ...window.edgetool.config.input.shape.slice(1)]")
        labels = page.evaluate("window.edgetool.config.labels") or [str(i) for i in range(10)]
        result = page.evaluate("window.edgetool.lastResult")
        assert labels[int(np.argmax(result["probabilities"]))] == "3"
        _fits(page)
        _shot(page, "phone-upload.png")
    finally:
        context.close()


def test_install_criteria_hold_on_a_phone(pw_driver, digits_url, tmp_path):
    """Installability is judged in a normal (persistent, non-incognito) profile, as on a phone's browser."""
    context = pw_driver.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=FLAGS, headless=True, **PHONE
    )
    try:
        page = context.new_page()
        page.goto(digits_url)
        page.evaluate("window.edgetool.ready")
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        page.reload()
        page.evaluate("window.edgetool.ready")
        cdp = context.new_cdp_session(page)
        errors = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
        assert errors == [], errors
        manifest = cdp.send("Page.getAppManifest")
        assert manifest["url"].endswith("/manifest.webmanifest") and not manifest.get("errors")
        icons = page.evaluate("fetch('manifest.webmanifest').then((r) => r.json()).then((m) => m.icons)")
        sizes = {icon["sizes"] for icon in icons}
        assert {"192x192", "512x512"} <= sizes and any("maskable" in icon.get("purpose", "") for icon in icons)
        assert page.evaluate("getComputedStyle(document.getElementById('pad')).touchAction") == "none"
    finally:
        context.close()
