"""In real Chromium with a WebGPU adapter (SwiftShader: `--enable-unsafe-webgpu` on a page from 127.0.0.1), issue 25
§1: tfjs's webgpu backend and LiteRT.js on its WebGPU accelerator predict real digits like the same fp32 .tflite
run natively by ai_edge_litert, join the auto-pick (and lose it to wasm on a software adapter), key the remembered
pick by the adapter, and are skipped with the reason where the browser has no WebGPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_tool.demo.serve import start_server
from tests.test_browser import CHROMIUM, FLAGS, _native_litert, _predict_all, _require_chromium, samples  # noqa: F401
from tests.test_browser_upload import photo_model, photo_site  # noqa: F401  (fixtures: an RGB model and its site)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

GPU_FLAGS = [f for f in FLAGS if f != "--disable-gpu"] + ["--enable-unsafe-webgpu"]
# Both engines compute in fp32 on this adapter (measured: |Δp| ~ 1e-7); fp16 would need ~1e-3
FP32_TOL = 1e-4


@pytest.fixture(scope="module")
def pw_driver():
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def gpu_browser(pw_driver):
    browser = pw_driver.chromium.launch(executable_path=str(CHROMIUM), args=GPU_FLAGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def site_url(digits_litert_site):
    site = digits_litert_site
    server, thread, url = start_server(site, "127.0.0.1", 0)
    yield site, url
    server.shutdown()
    server.server_close()
    thread.join(5)


def _open(browser, url):
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    return context, page, page.evaluate("window.edgetool.ready")


def _assert_like_native(probs, native):
    assert (probs.argmax(1) == native.argmax(1)).all()
    worst = float(np.abs(probs - native).max())
    assert worst <= FP32_TOL, f"max |p_webgpu - p_native| = {worst:.2e} > {FP32_TOL}"


def test_adapter_is_there(gpu_browser, site_url):
    context, page, info = _open(gpu_browser, site_url[1] + "?engine=tfjs&backend=wasm")
    try:
        assert info["runtime"]["gpuAdapter"] == "google/swiftshader"
    finally:
        context.close()


@pytest.mark.parametrize(
    ("query", "engine", "backend"),
    [
        ("?engine=tfjs&backend=webgpu", "tfjs", "webgpu"),
        ("?engine=litert-webgpu&backend=wasm", "litert-webgpu", "webgpu"),
    ],
)
def test_webgpu_engine_predicts_like_native_litert(gpu_browser, site_url, samples, query, engine, backend):
    site, url = site_url
    x, _ = samples
    context, page, info = _open(gpu_browser, url + query)
    try:
        assert info["engine"] == engine and (engine != "tfjs" or info["backend"] == "webgpu")
        probs, results = _predict_all(page, x)
    finally:
        context.close()
    assert {(r["engine"], r["backend"]) for r in results} == {(engine, backend)}
    _assert_like_native(probs, _native_litert(site / "model/model-fp32-b1.tflite", x))


@pytest.mark.parametrize("query", ["?engine=tfjs&backend=webgpu", "?engine=litert-webgpu&backend=wasm"])
def test_webgpu_engine_predicts_an_rgb_model_like_native_litert(gpu_browser, photo_model, photo_site, query):
    """A 32×32 RGB CNN (tests/test_browser_upload.py's colour digits), fed 16 of its calibration inputs."""
    x = np.load(photo_model[0] / "calibration.npz")["x"][:16].astype(np.float32)
    server, thread, url = start_server(photo_site, "127.0.0.1", 0)
    try:
        context, page, info = _open(gpu_browser, url + query)
        try:
            probs, results = _predict_all(page, x)
        finally:
            context.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert {r["backend"] for r in results} == {"webgpu"}
    _assert_like_native(probs, _native_litert(photo_site / "model/model-fp32-b1.tflite", x))


def test_auto_pick_benchmarks_webgpu_and_keys_the_pick_by_adapter(gpu_browser, site_url):
    context, page, info = _open(gpu_browser, site_url[1])
    try:
        assert "webgpu" in info["backends"] and "webgpu" in info["benchmark"]
        # SwiftShader is a CPU pretending to be a GPU: wasm wins the backend pick (timings, not speed figures)
        assert info["backend"] == min(info["benchmark"], key=info["benchmark"].get)
        assert info["benchmark"]["webgpu"] > info["benchmark"]["wasm"] and info["backend"] != "webgpu"
        listed = "litert-webgpu" in info["engines"]
        assert listed or "litert-webgpu" in info["skippedEngines"], info  # in the pick, or skipped with the reason
        if listed:
            assert "litert-webgpu" in info["enginePick"]["bench"]
        keys = page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('edgetool:auto-pick:'))")
        assert len(keys) == 1 and keys[0].endswith(":gpu=google/swiftshader"), keys
    finally:
        context.close()


def test_without_webgpu_the_engines_are_skipped_with_the_reason(pw_driver, site_url):
    browser = pw_driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)  # --disable-gpu
    try:
        context, page, info = _open(browser, site_url[1])
        has_gpu = page.evaluate("navigator.gpu ? navigator.gpu.requestAdapter().then((a) => a !== null) : false")
        assert not has_gpu
        assert "webgpu" not in info["backends"] and "litert-webgpu" not in info["engines"]
        assert "WebGPU" in info["skippedEngines"]["litert-webgpu"], info["skippedEngines"]
        assert "WebGPU" in info["runtime"]["webgpuSkipped"], info["runtime"]  # why tfjs's webgpu backend is not used
        assert info["runtime"]["gpuAdapter"] is None
    finally:
        browser.close()
