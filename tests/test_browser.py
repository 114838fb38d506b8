"""End to end in real Chromium: the demo site served by `edgetool serve` predicts like TensorFlow, installs, works offline."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from benchmarks.zoo.models import build
from edge_tool.demo.serve import start_server
from edge_tool.demo.vendor import LITERT_BUILDS
from edge_tool.models.signatures import load_serving_fn
from tests.edgetool_runs import REPO, edgetool_in_process

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
N_SAMPLES = 24
PROB_TOL = 1e-3
ARTIFACTS = REPO / "test-artifacts"


def _require_chromium() -> None:
    if CHROMIUM.is_file():
        return
    if os.environ.get("EDGETOOL_ALLOW_NO_BROWSER") == "1":
        pytest.skip("EDGETOOL_ALLOW_NO_BROWSER=1 and /usr/bin/chromium is missing")
    pytest.fail(
        "/usr/bin/chromium is missing: install it with `apt-get install -y chromium` "
        "(or set EDGETOOL_ALLOW_NO_BROWSER=1 to skip the browser tests)"
    )


@pytest.fixture(scope="module")
def site(digits_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "site"
    proc = edgetool_in_process("demo", digits_model, "-o", out, "--title", "Digits demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def url(site):
    server, thread, url = start_server(site, "127.0.0.1", 0)
    yield url
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    """A persistent (non-incognito) Chromium profile, so installability is judged as for a normal window."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            args=FLAGS,
            headless=True,
            viewport={"width": 1100, "height": 720},
        )
        yield context
        context.close()


@pytest.fixture(scope="module")
def page(browser_context, url):
    """The demo page, loaded and ready; page.requests records every URL it asked for."""
    page = browser_context.new_page()
    page.requests = []
    page.errors = []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.evaluate("window.edgetool.ready")
    yield page
    page.close()


@pytest.fixture(scope="module")
def samples(digits_model):
    """N held-out digits and TensorFlow's probabilities for them (serving signature of the SavedModel)."""
    data = np.load(digits_model / "eval.npz")
    x = data["x"][:N_SAMPLES].astype(np.float32)
    _, fn, info = load_serving_fn(digits_model)
    out = fn(**{info.inputs[0].name: x})
    probs = np.asarray(out[info.outputs[0].name])
    return x, probs


@pytest.fixture(scope="module")
def open_site(browser_context):
    """Serve another demo site on its own port (own origin, own service worker) and open it; cleaned up at the end."""
    opened = []

    def _open(site: Path):
        server, thread, url = start_server(site, "127.0.0.1", 0)
        extra = browser_context.new_page()
        extra.requests = []
        extra.on("request", lambda r: extra.requests.append(r.url))
        opened.append((server, thread, extra))
        extra.goto(url)
        extra.evaluate("window.edgetool.ready")
        return extra, url

    yield _open
    for server, thread, extra in opened:
        extra.close()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _tf_probs(model_dir: Path, x: np.ndarray) -> np.ndarray:
    _, fn, info = load_serving_fn(model_dir)
    return np.asarray(fn(**{info.inputs[0].name: x})[info.outputs[0].name])


def _predict_all(page, x) -> tuple[np.ndarray, list[dict]]:
    results = page.evaluate(
        "async (xs) => { const out = []; for (const v of xs) out.push(await window.edgetool.predict(v)); return out; }",
        [s.ravel().tolist() for s in x],
    )
    return np.array([r["probabilities"] for r in results]), results


def _assert_matches_tf(probs_js: np.ndarray, probs_tf: np.ndarray) -> None:
    disagreements = int((probs_js.argmax(1) != probs_tf.argmax(1)).sum())
    assert disagreements <= 1, f"{disagreements} of {len(probs_tf)} top-1 predictions differ from TensorFlow"
    worst = float(np.abs(probs_js - probs_tf).max())
    assert worst <= PROB_TOL, f"max |p_tfjs - p_tf| = {worst:.2e} > {PROB_TOL}"


def _assert_same_origin(page, url) -> None:
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    foreign = [u for u in page.requests if not u.removeprefix("blob:").startswith(origin + "/")]
    assert not foreign, f"requests left {origin}: {foreign[:5]}"
    assert page.requests, "no request recorded at all"


def _screenshot(page, name: str, tmp_path: Path) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    page.screenshot(path=str(shot), full_page=True)
    shutil.copyfile(shot, tmp_path / name)
    return shot


def test_auto_backend_predicts_like_tensorflow(page, url, samples, tmp_path):
    x, probs_tf = samples
    info = page.evaluate("window.edgetool.ready")
    assert info["backend"] in info["backends"] and set(info["backends"]) <= {"wasm", "webgl", "cpu"}
    assert "wasm" in info["backends"] and "cpu" in info["backends"]
    probs_js, results = _predict_all(page, x)
    _assert_matches_tf(probs_js, probs_tf)
    first = results[0]
    assert first["backend"] == info["backend"] and first["ms"] > 0
    assert [t["label"] for t in first["top"]][0] == str(int(probs_tf[0].argmax()))
    assert first["top"][0]["probability"] == pytest.approx(float(probs_tf[0].max()), abs=PROB_TOL)
    shot = _screenshot(page, "demo-prediction.png", tmp_path)
    assert shot.stat().st_size > 10_000
    assert page.locator("#top li").count() == 3
    assert page.locator("#latency").inner_text().endswith("ms")
    assert page.errors == []
    _assert_same_origin(page, url)


@pytest.mark.parametrize("backend", ["wasm", "cpu", "webgl"])
def test_every_backend_predicts_like_tensorflow(page, url, samples, backend):
    x, probs_tf = samples
    available = page.evaluate("window.edgetool.backends")
    if backend not in available:
        assert backend == "webgl", available  # wasm and cpu always work; webgl depends on the GPU stack
        pytest.skip(f"webgl is not available in this Chromium ({available})")
    assert page.evaluate("(b) => window.edgetool.setBackend(b)", backend) == backend
    probs_js, results = _predict_all(page, x[:8])
    assert {r["backend"] for r in results} == {backend}
    assert page.locator("#backend").input_value() == backend
    _assert_matches_tf(probs_js, probs_tf[:8])
    _assert_same_origin(page, url)


def test_wasm_backend_is_cross_origin_isolated(page):
    assert page.evaluate("window.crossOriginIsolated") is True  # COOP/COEP from edgetool serve: wasm threads


def test_drawing_on_the_canvas_predicts(page, url, tmp_path):
    page.click("#clear")
    assert page.locator("#top li").count() == 0
    box = page.locator("#pad").bounding_box()
    cx, top, bottom = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.15, box["y"] + box["height"] * 0.85
    page.mouse.move(cx - box["width"] * 0.1, top + box["height"] * 0.1)
    page.mouse.down()
    page.mouse.move(cx, top, steps=5)
    page.mouse.move(cx, bottom, steps=15)
    page.mouse.up()
    page.wait_for_function("document.querySelectorAll('#top li').length === 3")
    labels = page.locator("#top li .label").all_inner_texts()
    config_labels = page.evaluate("window.edgetool.config.labels")
    assert len(labels) == 3 and set(labels) <= set(config_labels)
    percents = [float(t.rstrip("%")) for t in page.locator("#top li .p").all_inner_texts()]
    assert percents == sorted(percents, reverse=True) and 0 < sum(percents) <= 100.2
    lit = page.evaluate("""() => { const c = document.getElementById('preview');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 64) n++; return n; }""")
    assert 2 <= lit < 40, f"{lit} of 64 model-input pixels lit by a single vertical stroke"
    _screenshot(page, "demo-drawing.png", tmp_path)
    _assert_same_origin(page, url)


def test_installable_service_worker_and_offline_reload(browser_context, page, url, samples):
    x, probs_tf = samples
    online, _ = _predict_all(page, x)
    assert page.evaluate("navigator.serviceWorker.ready.then((r) => r.active.state)") == "activated"
    page.reload()
    page.evaluate("window.edgetool.ready")
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    cdp = browser_context.new_cdp_session(page)
    errors = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
    assert errors == [], errors
    manifest = cdp.send("Page.getAppManifest")
    assert manifest["url"].endswith("/manifest.webmanifest") and not manifest.get("errors")
    browser_context.set_offline(True)
    try:
        page.reload()
        page.evaluate("window.edgetool.ready")
        probe = "fetch('offline-probe.txt', {cache: 'no-store'}).then(() => 'network', () => 'offline')"
        assert page.evaluate(probe) == "offline"  # the reload above was served by the service worker alone
        offline, _ = _predict_all(page, x)
    finally:
        browser_context.set_offline(False)
    np.testing.assert_allclose(offline, online, atol=1e-6)
    _assert_matches_tf(offline, probs_tf)
    _assert_same_origin(page, url)


def test_uint8_input_model_is_cast_and_predicts_like_tensorflow(uint8_model, open_site, tmp_path):
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", uint8_model, "-o", site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page, url = open_site(site)
    assert page.evaluate("window.edgetool.config.input.tfjsDtype") == "int32"
    x = np.load(uint8_model / "eval.npz")["x"][:N_SAMPLES]
    assert x.dtype == np.uint8
    probs_js, _ = _predict_all(page, x.astype(np.float64))
    _assert_matches_tf(probs_js, _tf_probs(uint8_model, x))
    _assert_same_origin(page, url)


def test_flat_input_form_predicts_like_tensorflow(flat_model, open_site, tmp_path):
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", flat_model, "-o", site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page, url = open_site(site)
    x = np.load(flat_model / "eval.npz")["x"]
    probs_tf = _tf_probs(flat_model, x)
    probs_js, _ = _predict_all(page, x)
    _assert_matches_tf(probs_js, probs_tf)
    assert page.locator("#pad").is_hidden() and page.locator("#fields input").count() == 4
    for i, value in enumerate(x[0]):
        page.fill(f"#fields input[name=f{i}]", repr(float(value)))
    page.locator("#top li").first.wait_for()  # the API predictions above already rendered; refresh from the form:
    page.evaluate("document.getElementById('top').replaceChildren()")
    page.click("#flat-input button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#top li').length === 3")
    labels = page.locator("#top li .label").all_inner_texts()
    expected = [["setosa", "versicolor", "virginica"][i] for i in np.argsort(-probs_tf[0])]
    assert labels == expected
    percents = [float(t.rstrip("%")) for t in page.locator("#top li .p").all_inner_texts()]
    np.testing.assert_allclose(percents, np.sort(probs_tf[0])[::-1] * 100, atol=0.051)
    _screenshot(page, "demo-flat-form.png", tmp_path)
    _assert_same_origin(page, url)


def _wait_for(page, expression: str, arg, timeout_s: float = 60.0):
    """Poll an async page expression until it returns something truthy (bounded); return that value. A poll the
    page's own navigation cuts short is polled again: a new build's service worker reloads the open pages once."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = page.evaluate(expression, arg)
        except PlaywrightError as exc:
            if "Execution context was destroyed" not in str(exc):
                raise
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {expression}")


def test_rebuilt_site_replaces_the_old_cache(page, site, digits_model, url):
    before = page.evaluate("caches.keys()")
    assert len(before) == 1 and before[0].startswith("edgetool-demo:")
    proc = edgetool_in_process("demo", digits_model, "-o", site, "--force", "--title", "Digits demo v2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    new_version = (site / "sw.js").read_text().split('const VERSION = "')[1].split('"')[0]
    assert not before[0].endswith(new_version)
    page.evaluate("navigator.serviceWorker.getRegistration().then((r) => r.update())")
    _wait_for(
        page,
        "async (v) => { const k = await caches.keys(); return k.length === 1 && k[0].endsWith(':' + v); }",
        new_version,
    )
    page.reload()
    page.evaluate("window.edgetool.ready")
    assert page.title() == "Digits demo v2"
    keys = page.evaluate("caches.keys()")
    assert len(keys) == 1 and keys[0].endswith(":" + new_version), keys
    _assert_same_origin(page, url)


@pytest.fixture
def fresh_page(browser_context, url):
    """Open the site (plus a query string) in a new page that records its requests; closed afterwards."""
    pages = []

    def _open(query: str = ""):
        extra = browser_context.new_page()
        extra.requests = []
        extra.on("request", lambda r: extra.requests.append(r.url))
        pages.append(extra)
        extra.goto(url + query)
        return extra, extra.evaluate("window.edgetool.ready")

    yield _open
    for extra in pages:
        extra.close()


def test_served_page_runs_threaded_simd_wasm(fresh_page):
    page, info = fresh_page()
    runtime = info["runtime"]
    cores = page.evaluate("navigator.hardwareConcurrency")
    assert runtime["crossOriginIsolated"] is True
    assert page.evaluate("tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')") is True
    assert runtime["wasmThreads"] == max(1, min(cores // 2, 8))  # default: tfjs's one thread per two logical cores
    wasm_files = {u.rsplit("/", 1)[1] for u in page.requests if u.endswith(".wasm")}
    assert wasm_files == {"tfjs-backend-wasm-threaded-simd.wasm"}


def test_threads_query_can_use_every_core(fresh_page, samples):
    x, probs_tf = samples
    page, info = fresh_page("?threads=64")
    cores = page.evaluate("navigator.hardwareConcurrency")
    assert cores == info["runtime"]["hardwareConcurrency"]  # the start-up override is gone again
    assert info["runtime"]["wasmThreads"] == min(cores, 8)  # capped at the cores (and the pool of 8), not at cores / 2
    assert page.evaluate("window.edgetool.setBackend('wasm')") == "wasm"
    probs_js, _ = _predict_all(page, x[:8])
    _assert_matches_tf(probs_js, probs_tf[:8])


def test_query_picks_backend_and_thread_count(fresh_page, samples):
    x, probs_tf = samples
    page, info = fresh_page("?backend=wasm&threads=1")
    assert info["backend"] == "wasm" and info["backends"] == ["wasm"]
    assert info["runtime"]["wasmThreads"] == 1
    assert page.locator("#threads").input_value() == "1"
    probs_js, _ = _predict_all(page, x[:8])
    _assert_matches_tf(probs_js, probs_tf[:8])
    page, info = fresh_page("?backend=cpu")
    assert info["backend"] == "cpu" and info["backends"] == ["cpu"] and list(info["benchmark"]) == ["cpu"]


def test_auto_pick_benchmarks_only_backends_that_can_win(fresh_page):
    page, info = fresh_page()
    assert "cpu" in info["backends"] and "cpu" not in info["benchmark"]  # plain-JS fallback: listed, not timed
    assert info["backend"] in info["benchmark"] and info["benchmark"][info["backend"]] > 0
    renderer = info["runtime"]["webglRenderer"] or ""
    if "webgl" in info["backends"] and "SwiftShader" in renderer:
        assert "webgl" not in info["benchmark"]
    rows = page.locator("#bench tr").all_text_contents()  # inside a closed <details>
    assert len(rows) == len(info["backends"])
    assert sum("not benchmarked" in r for r in rows) == len(info["backends"]) - len(info["benchmark"])


def test_auto_pick_is_remembered_per_model_and_browser(fresh_page, samples):
    x, probs_tf = samples
    page, _ = fresh_page()
    page.evaluate("localStorage.clear()")
    page, first = fresh_page()
    assert first["picked"] == "benchmark" and first["benchmark"]
    keys = page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('edgetool:auto-pick:'))")
    assert len(keys) == 1 and keys[0].endswith(":" + page.evaluate("navigator.userAgent")), keys
    page, second = fresh_page()
    assert second["picked"] == "remembered"  # the second load reuses the pick: nothing is timed again
    assert (second["backend"], second["benchmark"], second["backends"]) == (
        first["backend"],
        first["benchmark"],
        first["backends"],
    )
    probs_js, results = _predict_all(page, x[:8])
    assert {r["backend"] for r in results} == {first["backend"]}
    _assert_matches_tf(probs_js, probs_tf[:8])
    if first["runtime"]["hardwareConcurrency"] >= 2:  # (one core: every thread count is 1)
        _, other_threads = fresh_page(f"?threads={first['runtime']['wasmThreads'] % 2 + 1}")
        assert other_threads["picked"] == "benchmark"  # another wasm thread count is another pick
    _, forced = fresh_page("?backend=cpu")
    assert forced["picked"] == "query"


def test_time_inference_reports_each_run(page):
    result = page.evaluate("window.edgetool.timeInference(5, 1)")
    assert result["backend"] == page.evaluate("window.edgetool.backend")
    assert len(result["times"]) == 5 and all(t > 0 for t in result["times"])


# ---------- --litert: the LiteRT.js engine ----------

LITERT_PROB_TOL = 0.01  # against the same .tflite run natively; the int8 softmax itself is quantized to 1/256


@pytest.fixture(scope="module")
def litert_page(digits_litert_site, open_site):
    """A site built with --litert, opened on its own origin: (page, url, site)."""
    site = digits_litert_site
    page, url = open_site(site)
    return page, url, site


def _native_litert(tflite: Path, x: np.ndarray) -> np.ndarray:
    """The .tflite run natively by ai_edge_litert, one sample at a time (its batch is fixed to 1)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(tflite))
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    rows = []
    for sample in x:
        interp.set_tensor(inp["index"], sample[None].astype(inp["dtype"]))
        interp.invoke()
        rows.append(interp.get_tensor(out["index"])[0].astype(np.float64))
    return np.array(rows)


def _assert_matches_native_and_tf(probs_js, probs_native, probs_tf) -> None:
    assert (probs_js.argmax(1) == probs_native.argmax(1)).all(), (probs_js.argmax(1), probs_native.argmax(1))
    worst = float(np.abs(probs_js - probs_native).max())
    assert worst <= LITERT_PROB_TOL, f"max |p_litertjs - p_native| = {worst:.2e} > {LITERT_PROB_TOL}"
    disagreements = int((probs_js.argmax(1) != probs_tf.argmax(1)).sum())
    assert disagreements <= 1, f"{disagreements} of {len(probs_tf)} LiteRT.js int8 top-1 predictions differ from TF"


def _litert_engine_names(page) -> list[str]:
    """The engines a --litert page offers: each .tflite at 1 thread and, when the page may start wasm threads,
    at one per core too (the micro-benchmark picks; a busy machine makes the thread pool slower than 1 thread)."""
    cores = page.evaluate("navigator.hardwareConcurrency")
    pooled = cores > 1 and page.evaluate("crossOriginIsolated")
    return ["tfjs"] + [
        n for base in ("litert", "litert-fp32") for n in [base] + ([f"{base}-x{cores}"] if pooled else [])
    ]


def test_litert_engine_predicts_like_native_litert_and_tensorflow(litert_page, samples, tmp_path):
    page, url, site = litert_page
    x, probs_tf = samples
    info = page.evaluate("window.edgetool.ready")
    assert info["engines"] == _litert_engine_names(page)
    pick = info["enginePick"]  # engine x artefact: the fastest of a few warm runs each
    assert pick["picked"] == "benchmark" and set(pick["bench"]) == set(info["engines"]) and not info["coldEngines"]
    assert info["engine"] == min(pick["bench"], key=pick["bench"].get)
    assert page.locator("#engine").is_visible()
    assert page.evaluate("window.edgetool.setEngine('litert-fp32')") == "litert-fp32"
    probs_fp32, results = _predict_all(page, x)
    assert {r["engine"] for r in results} == {"litert-fp32"}
    native_fp32 = _native_litert(site / "model/model-fp32-b1.tflite", x)
    assert (
        float(np.abs(probs_fp32 - native_fp32).max()) <= PROB_TOL
        and float(np.abs(probs_fp32 - probs_tf).max()) <= PROB_TOL
    )
    assert page.evaluate("window.edgetool.setEngine('litert')") == "litert"
    assert page.locator("#engine").input_value() == "litert"
    probs_js, results = _predict_all(page, x)
    assert {r["engine"] for r in results} == {"litert"}
    _assert_matches_native_and_tf(probs_js, _native_litert(site / "model/model-int8-b1.tflite", x), probs_tf)
    times = page.evaluate("window.edgetool.timeInference(5, 1)")
    assert times["engine"] == "litert" and len(times["times"]) == 5
    for name in info["engines"][2:]:
        if "-x" in name:  # the same .tflite on the wasm thread pool: the same predictions
            assert page.evaluate(f"window.edgetool.setEngine('{name}')") == name
            probs_pool, results = _predict_all(page, x)
            assert {r["engine"] for r in results} == {name}
            tflite = "model-fp32-b1.tflite" if "fp32" in name else "model-int8-b1.tflite"
            assert float(np.abs(probs_pool - _native_litert(site / "model" / tflite, x)).max()) <= LITERT_PROB_TOL
    build = info["litert"]  # Chromium has relaxed SIMD and the page is cross-origin isolated: never compat here
    assert build["relaxedSimd"] and build["threadsSupported"] and build["build"] in ("default", "threaded")
    assert _litert_wasm(page) == {_wasm_of(build["build"])}  # the chosen build, no other one asked for
    _assert_same_origin(page, url)


# A browser without relaxed SIMD: WebAssembly.validate refuses any module using i8x16.relaxed_swizzle (0xfd 0x80 0x02).
NO_RELAXED_SIMD = """
(() => { const validate = WebAssembly.validate.bind(WebAssembly);
  WebAssembly.validate = (bytes) => { const b = new Uint8Array(bytes.buffer || bytes);
    for (let i = 0; i + 2 < b.length; i++) if (b[i] === 0xfd && b[i + 1] === 0x80 && b[i + 2] === 0x02) return false;
    return validate(bytes); }; })();
"""


def _wasm_of(build: str) -> str:
    return LITERT_BUILDS[build].removesuffix(".js") + ".wasm"


def _litert_wasm(page) -> set[str]:
    return {u.rsplit("/", 1)[1] for u in page.requests if u.endswith(".wasm") and "/litert/" in u}


@pytest.mark.parametrize(
    ("query", "init", "want"),
    [
        ("?engine=litert", NO_RELAXED_SIMD, ("compat", 1)),  # no relaxed SIMD: the SIMD128 fallback
        ("?engine=litert&threads=2", NO_RELAXED_SIMD, ("compat", 1)),  # threaded needs relaxed SIMD too
        ("?engine=litert&threads=2", None, ("threaded", 2)),  # isolated + 2 threads asked for: the thread pool
        ("?engine=litert&threads=1", None, ("default", 1)),  # one thread: relaxed SIMD, no worker pool
    ],
)
def test_litert_engine_loads_the_best_build_the_browser_supports(
    browser_context, litert_page, samples, query, init, want
):
    _, url, site = litert_page
    x, probs_tf = samples
    page = browser_context.new_page()
    page.requests = []
    page.on("request", lambda r: page.requests.append(r.url))
    try:
        if init:
            page.add_init_script(init)
        page.goto(url + query)
        info = page.evaluate("window.edgetool.ready")
        assert info["engine"] == "litert" and (info["litert"]["build"], info["litert"]["threads"]) == want
        assert info["litert"]["relaxedSimd"] is (init is None)
        assert _litert_wasm(page) == {_wasm_of(want[0])}
        probs_js, results = _predict_all(page, x[:8])
        assert {r["engine"] for r in results} == {"litert"}
        _assert_matches_native_and_tf(
            probs_js, _native_litert(site / "model/model-int8-b1.tflite", x[:8]), probs_tf[:8]
        )
    finally:
        page.close()


def test_litert_engine_drives_the_drawing_ui(litert_page, tmp_path):
    page, url, _ = litert_page
    page.select_option("#engine", "tfjs")
    assert page.evaluate("window.edgetool.engine") == "tfjs"
    page.select_option("#engine", "litert")
    page.wait_for_function("window.edgetool.engine === 'litert'")
    page.click("#clear")
    box = page.locator("#pad").bounding_box()
    cx = box["x"] + box["width"] * 0.5
    page.mouse.move(cx, box["y"] + box["height"] * 0.15)
    page.mouse.down()
    page.mouse.move(cx, box["y"] + box["height"] * 0.85, steps=15)
    page.mouse.up()
    page.wait_for_function("document.querySelectorAll('#top li').length === 3")
    assert page.locator("#latency").inner_text().endswith("ms")
    _screenshot(page, "demo-litert.png", tmp_path)
    _assert_same_origin(page, url)


def test_litert_engine_works_offline(browser_context, litert_page, samples):
    page, url, site = litert_page
    x, probs_tf = samples
    _wait_for(page, "() => navigator.serviceWorker.ready.then((r) => r.active.state === 'activated')", None)
    page.reload()
    page.evaluate("window.edgetool.ready")
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    browser_context.set_offline(True)
    try:
        page.reload()
        info = page.evaluate("window.edgetool.ready")
        assert info["engines"] == _litert_engine_names(page)
        assert info["enginePick"]["picked"] == "remembered" and info["engine"] in info["engines"]
        # a remembered pick warms only its engine before the page is ready; the others are warmed when chosen
        assert set(info["coldEngines"]) == set(info["engines"]) - {"tfjs", info["engine"]}
        probe = "fetch('offline-probe.txt', {cache: 'no-store'}).then(() => 'network', () => 'offline')"
        assert page.evaluate(probe) == "offline"
        assert page.evaluate("window.edgetool.setEngine('litert')") == "litert"
        probs_js, results = _predict_all(page, x)
    finally:
        browser_context.set_offline(False)
    assert {r["engine"] for r in results} == {"litert"}
    _assert_matches_native_and_tf(probs_js, _native_litert(site / "model/model-int8-b1.tflite", x), probs_tf)
    _assert_same_origin(page, url)


# ---------- any model: several inputs, several heads, open height/width (zoo models, trained) ----------

ANY_MODEL_SAMPLES = 6


@pytest.fixture(scope="module")
def zoo_model(tmp_path_factory):
    """Build a zoo model (benchmarks/zoo/models.py: seeded, briefly trained, with eval.npz) once per module."""
    built = {}

    def _get(name: str) -> Path:
        if name not in built:
            built[name] = tmp_path_factory.mktemp(name) / name
            build(name, built[name])
        return built[name]

    return _get


def _tf_outputs(model_dir: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    _, fn, _ = load_serving_fn(model_dir)
    return {k: np.asarray(v) for k, v in fn(**feeds).items()}


def _page_outputs(page, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """window.edgetool.predict({name: {values, shape}}) one sample at a time -> every head, stacked."""
    samples = [
        {k: {"values": v[i].ravel().tolist(), "shape": [1, *v.shape[1:]]} for k, v in feeds.items()}
        for i in range(len(next(iter(feeds.values()))))
    ]
    rows = page.evaluate(
        "async (ss) => { const out = []; for (const s of ss) out.push((await window.edgetool.predict(s))"
        ".outputs); return out; }",
        samples,
    )
    return {k: np.array([r[k]["values"] for r in rows]) for k in rows[0]}


def _assert_heads_match(got: dict, want: dict) -> None:
    assert set(got) == set(want), (sorted(got), sorted(want))
    for name, ref in want.items():
        worst = float(np.abs(got[name].reshape(ref.shape) - ref).max())
        assert worst <= PROB_TOL, f"head {name}: max |page - TF| = {worst:.2e} > {PROB_TOL}"


def test_multi_input_model_predicts_like_tensorflow(zoo_model, open_site, tmp_path):
    model = zoo_model("multi_input")  # image float32[N,8,8,1] + counts int32[N,8]
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"<b>{i}</b>\n" for i in range(10)))  # markup in labels must stay text
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", model, "-o", site, "--labels", labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = np.load(model / "eval.npz")
    feeds = {
        "image": data["image"][:ANY_MODEL_SAMPLES].astype(np.float32),
        "counts": data["counts"][:ANY_MODEL_SAMPLES].astype(np.int32),
    }
    want = _tf_outputs(model, feeds)
    page, url = open_site(site)
    _assert_heads_match(_page_outputs(page, feeds), want)
    with pytest.raises(Exception, match="2 inputs"):  # the one-input form of predict() names what is missing
        page.evaluate("window.edgetool.predict(new Array(64).fill(0))")
    # the page itself: the image shown on the pad by predict(), the int input typed into its integer fields
    first = {k: v[:1] for k, v in feeds.items()}
    _page_outputs(page, first)
    fields = page.locator("#fields fieldset[data-input=counts] input")
    assert fields.count() == 8 and fields.first.get_attribute("step") == "1"
    for i, value in enumerate(feeds["counts"][0]):
        fields.nth(i).fill(str(int(value)))
    page.evaluate("document.getElementById('top').replaceChildren()")
    page.click("#flat-input button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#top li').length === 3")
    assert page.locator("#top li .label").first.inner_text() == f"<b>{int(want['probs'][0].argmax())}</b>"
    assert page.locator("#top b").count() == 0
    _screenshot(page, "demo-multi-input.png", tmp_path)
    _assert_same_origin(page, url)


def test_dynamic_hw_model_predicts_like_tensorflow_at_any_size(zoo_model, open_site, tmp_path):
    model = zoo_model("dynamic_hw")  # image float32[N,?,?,1], trained on 16x16 digits
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", model, "-o", site, "--input-size", "16x16")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    x = np.load(model / "eval.npz")["x"][:ANY_MODEL_SAMPLES].astype(np.float32)
    page, url = open_site(site)
    assert page.evaluate("window.edgetool.config.inputs[0].feedShape") == [1, 16, 16, 1]
    _assert_heads_match(_page_outputs(page, {"image": x}), _tf_outputs(model, {"image": x}))
    probs_js, _ = _predict_all(page, x)  # predict(values) with the default (--input-size) shape
    _assert_matches_tf(probs_js, _tf_probs(model, x))
    big = x.repeat(2, axis=1).repeat(2, axis=2)[:2]  # 32x32: the page feeds any H×W given with an explicit shape
    _assert_heads_match(_page_outputs(page, {"image": big}), _tf_outputs(model, {"image": big}))
    assert page.locator("#preview").evaluate("c => [c.width, c.height]") == [16, 16]
    _screenshot(page, "demo-dynamic-hw.png", tmp_path)
    _assert_same_origin(page, url)
