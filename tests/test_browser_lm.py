"""The language-model page (``edgetool demo LM.tflite``, task lm inferred from the contract) in real Chromium: the
page's greedy and seeded-sampled continuations equal native LiteRT's (ai_edge_litert signature runners, the caches fed
back call by call: tests/oracles/lm_native.py) token for token, the stop button stops a generation, and a phone-sized
viewport shows the prompt box and the output without horizontal scrolling."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edge_tool.demo.lm_spec import read_lm
from edge_tool.demo.serve import start_server
from edge_tool.lm.spec import SPEC_NAME
from edge_tool.tflite_converter.run import Refusal, new_converter, run_converter
from tests.edgetool_runs import edgetool_in_process
from tests.oracles.lm_native import encode, generate, native_session
from tests.test_browser import CHROMIUM, FLAGS, _require_chromium, _wait_for
from tests.test_browser_phone import PHONE

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PROMPTS = ("Hello there", "The quick brown fox jumps over the lazy dog, and then")  # 12 and 53 tokens with bos
SAMPLED = ({"temperature": 0.8, "topK": 0, "seed": 7}, {"temperature": 1.3, "topK": 12, "seed": 123456789})


def convert_lm(saved_model: Path, out: Path) -> Path:
    """The contract SavedModel as one fp32 multi-signature .tflite, with its description beside it."""
    keys = ("decode", "prefill_16", "prefill_8")
    converter = new_converter(saved_model, signatures=keys)
    out.write_bytes(run_converter(converter, Refusal(model=saved_model, failed=f"Converting {saved_model} failed")))
    shutil.copyfile(saved_model / "assets" / SPEC_NAME, out.parent / SPEC_NAME)
    return out


@pytest.fixture(scope="module")
def lm_tflite(tiny_lm, tmp_path_factory) -> Path:
    return convert_lm(tiny_lm / "model", tmp_path_factory.mktemp("lm") / "lm.tflite")


@pytest.fixture(scope="module")
def lm_url(lm_tflite, tmp_path_factory):
    site = tmp_path_factory.mktemp("lm-site") / "site"
    proc = edgetool_in_process("demo", lm_tflite, "-o", site, "--title", "Tiny LM")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "task: lm (the .tflite follows the LM contract)" in proc.stdout
    server, thread, url = start_server(site, "127.0.0.1", 0)
    yield url
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def browser():
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield browser
        browser.close()


def _open(browser, url: str, device: dict | None = None):
    context = browser.new_context(**(device or {}))
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.evaluate("window.edgetool.ready")
    return context, page


@pytest.fixture(scope="module")
def lm_page(browser, lm_url):
    context, page = _open(browser, lm_url)
    yield page
    assert page.errors == []
    context.close()


@pytest.fixture(scope="module")
def native(lm_tflite):
    return native_session(lm_tflite), read_lm(lm_tflite)


def _page_generate(page, prompt: str, max_new: int, **sampler) -> dict:
    return page.evaluate("o => window.edgetool.generate(o)", {"prompt": prompt, "maxNew": max_new, **sampler})


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_continuation_equals_native_litert(lm_page, native, prompt):
    session, lm = native
    got = _page_generate(lm_page, prompt, 40)
    want = generate(session, lm, encode(prompt, lm["bosId"]), 40)
    assert got["promptIds"] == encode(prompt, lm["bosId"])  # the JS tokenizer gives the Python ids
    assert got["tokens"] == want.tokens and got["reason"] == want.reason
    assert got["ttftMs"] > 0 and got["decodeSteps"] == len(want.decode_ms)


@pytest.mark.parametrize("sampler", SAMPLED)
def test_seeded_sampling_equals_native_litert(lm_page, native, sampler):
    session, lm = native
    prompt = PROMPTS[0]
    got = _page_generate(lm_page, prompt, 48, **sampler)
    want = generate(
        session, lm, encode(prompt, lm["bosId"]), 48, sampler["temperature"], sampler["topK"], sampler["seed"]
    )
    assert got["tokens"] == want.tokens
    greedy = generate(session, lm, encode(prompt, lm["bosId"]), 48).tokens
    assert got["tokens"] != greedy  # the draws were used


@pytest.mark.parametrize("query", ["?threads=2", "?litert-build=compat"])
def test_every_wasm_build_in_the_worker_gives_the_same_tokens(browser, lm_url, native, query):
    """The threaded build starts its pthread workers from inside the page's worker (lm/worker.js points Emscripten at
    the build's own folder); the SIMD128 compat build runs too; both give native's greedy tokens."""
    session, lm = native
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(lm_url + query)
        engine = page.evaluate("window.edgetool.ready")["engine"]
        assert engine["build"] == ("threaded" if "threads" in query else "compat")
        got = _page_generate(page, PROMPTS[0], 24)
        assert got["tokens"] == generate(session, lm, encode(PROMPTS[0], lm["bosId"]), 24).tokens
    finally:
        context.close()


def test_stop_button_stops_the_generation(lm_page):
    """Stop pressed while the prompt is prefilled: the worker takes the stop in at its first pause between tokens
    (its messages arrive in order), so exactly one token is generated of the 60 the context has room for."""
    page = lm_page
    page.fill("#prompt", "Stop")
    page.fill("#max-new", "60")
    page.evaluate("document.getElementById('generate').click(); document.getElementById('stop').click()")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Done')")
    assert page.text_content("#status") == "Done (1 tokens, stopped)."
    assert page.is_disabled("#stop") and not page.is_disabled("#generate")


def test_the_page_generates_offline_after_one_visit(browser, lm_url):
    """The worker's fetches (the wasm build, the model) go through the service worker: offline, the reloaded page
    loads from it alone and generates the same text."""
    context, page = _open(browser, lm_url)
    try:
        online = _page_generate(page, PROMPTS[0], 16)
        cached = (
            "() => caches.keys().then((k) => caches.open(k[0])).then((c) => c.keys()).then((r) => "
            "r.map((q) => new URL(q.url).pathname).filter((p) => p.endsWith('.wasm')).length === 1)"
        )
        _wait_for(page, cached, None, 30)
        context.set_offline(True)
        page.reload()
        page.evaluate("window.edgetool.ready")
        probe = "fetch('offline-probe.txt', {cache: 'no-store'}).then(() => 'network', () => 'offline')"
        assert page.evaluate(probe) == "offline"
        assert _page_generate(page, PROMPTS[0], 16)["tokens"] == online["tokens"]
    finally:
        context.close()


def test_phone_viewport_shows_the_prompt_box_and_the_output(browser, lm_url):
    context, page = _open(browser, lm_url, PHONE)
    try:
        page.fill("#prompt", "Hi")
        page.click("#generate")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('Done')")
        for element in ("#prompt", "#generate", "#output", "#tps"):
            box = page.locator(element).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["viewport"]["width"]
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["viewport"]["width"]
        assert page.text_content("#generated") and "ms" in page.text_content("#ttft")
        assert page.errors == []
    finally:
        context.close()


def test_a_contract_saved_model_is_sent_to_convert_first(tiny_lm, tmp_path):
    """demo infers the LM task from a SavedModel's signature names too, and refuses it with the way out."""
    proc = edgetool_in_process("demo", tiny_lm / "model", "-o", tmp_path / "site")
    assert proc.returncode == 2 and "is not a .tflite file" in proc.stdout + proc.stderr
    assert not (tmp_path / "site").exists()


def test_without_a_description_the_byte_defaults_apply(lm_tflite, tmp_path):
    bare = tmp_path / "bare.tflite"
    shutil.copyfile(lm_tflite, bare)
    lm = read_lm(bare)
    assert not lm["described"] and (lm["bosId"], lm["padId"], lm["stopIds"]) == (256, 258, [257])
    assert lm["prefill"] == [{"name": "prefill_8", "length": 8}, {"name": "prefill_16", "length": 16}]
    assert lm["cacheShape"] == [1, 64, 4, 8] and lm["caches"][:2] == ["kv_cache_k_0", "kv_cache_v_0"]
