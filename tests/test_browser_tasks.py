"""The demo page per task, in real Chromium: a LiteRT.js-only site for a model tensorflowjs cannot convert (exact
GELU; one float input, or two int64 inputs), independent sigmoid probabilities, a segmentation mask, a WAV upload, named regression values. Oracles:
TensorFlow running the SavedModel, and LiteRT running the site's own .tflite."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from tests import page_task_models as models
from tests.edgetool_runs import run_edgetool
from tests.test_browser import _assert_same_origin, _native_litert, browser_context, open_site  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.browser]
EXACT = 1e-5  # float32 tfjs (wasm) against TensorFlow on these tiny models


@pytest.fixture(scope="module")
def task_site(tmp_path_factory):
    """Build model NAME and its demo site (extra demo args), once per module: (model dir, site dir, demo stdout)."""
    built = {}

    def _get(name: str, *args: str):
        if (name, args) not in built:
            root = tmp_path_factory.mktemp(name)
            model = (
                root / "model"
                if name not in {n for n, _ in built}
                else next(m for (n, _), (m, _, _) in built.items() if n == name)
            )
            if not model.exists():
                models.build(name, model)
            site = root / "site"
            proc = run_edgetool("demo", model, "-o", site, *args)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            built[(name, args)] = (model, site, proc.stdout)
        return built[(name, args)]

    return _get


def test_litert_site_runs_a_model_tensorflowjs_cannot_convert(task_site, open_site):
    model, site, out = task_site("gelu", "--litert")
    assert "Erfc" in out and "LiteRT.js alone" in out
    files = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert not any(f.startswith("vendor/tf") or f == "model/model.json" or "tfjs" in f for f in files), files
    assert "tf.min.js" not in (site / "index.html").read_text()
    config = json.loads((site / "demo-config.json").read_text())
    assert config["modelUrl"] is None and config["litert"]["variants"]
    page, url = open_site(site)
    info = page.evaluate("window.edgetool.ready")
    assert info["engines"] and all(e.startswith("litert") for e in info["engines"]), info
    assert info["backend"] is None and info["backends"] == []
    x = np.random.default_rng(1).normal(size=(6, 8)).astype(np.float32)
    assert page.evaluate("window.edgetool.setEngine('litert-fp32')") == "litert-fp32"
    got = np.array(
        [page.evaluate("(v) => window.edgetool.predict(v).then((r) => r.probabilities)", s.tolist()) for s in x]
    )
    np.testing.assert_allclose(got, _native_litert(site / "model/model-fp32-b1.tflite", x), atol=1e-5)
    np.testing.assert_allclose(got, models.serving_outputs(model, x), atol=1e-4)
    assert "LiteRT.js" in page.locator("#engine-name").inner_text()
    # the engine pick is remembered without a tfjs backend in the key: a reload benchmarks nothing
    page.reload()
    assert page.evaluate("window.edgetool.ready")["enginePick"]["picked"] == "remembered"
    _assert_same_origin(page, url)


def _native_signature(tflite: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The .tflite's serving signature run by ai_edge_litert one sample at a time, each input fed by its name."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(tflite)).get_signature_runner("serving_default")
    wanted = runner.get_input_details()
    n = len(next(iter(feeds.values())))
    rows = [runner(**{k: feeds[k][i : i + 1].astype(d["dtype"]) for k, d in wanted.items()}) for i in range(n)]
    return np.array([next(iter(r.values()))[0] for r in rows], np.float64)


def test_litert_site_runs_a_two_input_int64_model_tensorflowjs_cannot_convert(task_site, open_site):
    # BERT-like: int64 input_ids + attention_mask [N,16], exact GELU. LiteRT.js 2.5.3 holds no int64 tensor, so the
    # .tflite takes int32 and casts inside; the page feeds each input by name.
    model, site, out = task_site("bert", "--litert")
    assert "Erfc" in out and "LiteRT.js alone" in out
    lrt = json.loads((site / "demo-config.json").read_text())["litert"]
    for spec in (lrt, *lrt["variants"]):
        assert {(i["key"], i["feed"], i["dtype"]) for i in spec["inputs"]} == {
            ("input_ids", "input_ids", "int32"),
            ("attention_mask", "attention_mask", "int32"),
        }
    feeds = models.token_ids(6, seed=3)
    want_tf = models.serving_outputs(model, feeds)
    page, url = open_site(site)

    def page_probs(engine: str) -> np.ndarray:
        assert page.evaluate(f"window.edgetool.setEngine('{engine}')") == engine
        rows = []
        for i in range(len(feeds["input_ids"])):
            sample = {k: v[i].tolist() for k, v in feeds.items()}
            rows.append(page.evaluate("(f) => window.edgetool.predict(f).then((r) => r.probabilities)", sample))
        return np.array(rows)

    fp32 = page_probs("litert-fp32")
    np.testing.assert_allclose(fp32, _native_signature(site / "model/model-fp32-b1.tflite", feeds), atol=1e-5)
    np.testing.assert_allclose(fp32, want_tf, atol=1e-4)  # the int32 feed computes what the int64 model does
    int8 = page_probs("litert")
    np.testing.assert_allclose(int8, _native_signature(site / "model/model-int8-b1.tflite", feeds), atol=0.01)
    # the page's own form: one fieldset of integer fields per input, read by name
    for name, values in feeds.items():
        fields = page.locator(f"#fields fieldset[data-input={name}] input")
        assert fields.count() == 16 and fields.first.get_attribute("step") == "1"
        for j, value in enumerate(values[0]):
            fields.nth(j).fill(str(int(value)))
    page.evaluate("document.getElementById('top').replaceChildren()")
    page.click("#flat-input button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#top li').length === 3")
    np.testing.assert_allclose(page.evaluate("window.edgetool.lastResult.probabilities"), int8[0], atol=1e-6)
    _assert_same_origin(page, url)


def test_multilabel_sigmoid_outputs_are_independent_probabilities(task_site, open_site):
    model, site, out = task_site("multilabel")
    config = json.loads((site / "demo-config.json").read_text())
    assert config["task"]["name"] == "multilabel" and config["outputs"][0]["activation"] == "sigmoid"
    page, url = open_site(site)
    x = np.random.default_rng(2).normal(size=(5, 6)).astype(np.float32)
    want = models.serving_outputs(model, x)
    assert (want > 0.5).sum(axis=1).max() >= 2  # several labels on at once: a softmax would split them
    results = [page.evaluate("(v) => window.edgetool.predict(v)", s.tolist()) for s in x]
    np.testing.assert_allclose(np.array([r["probabilities"] for r in results]), want, atol=EXACT)
    top = results[-1]["top"]
    assert len(top) == 4 and [t["label"] for t in top] == [config["labels"][i] for i in np.argsort(-want[-1])]
    shown = [float(t.rstrip("%")) for t in page.locator("#top li .p").all_inner_texts()]
    np.testing.assert_allclose(shown, np.sort(want[-1])[::-1] * 100, atol=0.051)
    assert sum(shown) > 100  # independent: not a distribution over the labels
    _assert_same_origin(page, url)


def _mask_classes(page) -> np.ndarray:
    """The mask canvas's pixels mapped back to classes through the page's own palette (ui/mask.js)."""
    pixels, palette, (h, w) = page.evaluate("""async () => {
        const { classColour } = await import('./ui/mask.js');
        const c = document.getElementById('seg-mask');
        const d = Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data);
        return [d, Array.from({length: 4}, (_, i) => classColour(i)), [c.height, c.width]]; }""")
    rgba = np.array(pixels).reshape(h, w, 4)
    assert (rgba[..., 3] == 255).all()
    lookup = {tuple(c): i for i, c in enumerate(palette)}
    return np.vectorize(lambda r, g, b: lookup.get((r, g, b), -1))(rgba[..., 0], rgba[..., 1], rgba[..., 2])


def test_segmentation_mask_is_the_argmax_of_the_model_output(task_site, open_site, tmp_path):
    model, site, _ = task_site("segmentation")
    assert json.loads((site / "demo-config.json").read_text())["task"]["name"] == "segmentation"
    page, url = open_site(site)
    from PIL import Image

    rng = np.random.default_rng(3)
    Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / "in.png")
    page.set_input_files("#file", str(tmp_path / "in.png"))
    page.wait_for_function("!document.getElementById('seg').hidden")
    fed = page.evaluate("window.edgetool.lastInput")
    x = np.array(fed["image"]["values"], np.float32).reshape(fed["image"]["shape"])
    scores = models.serving_outputs(model, x)[0]
    mask = _mask_classes(page)
    assert mask.shape == scores.shape[:2] and (mask >= 0).all()
    ordered = np.sort(scores, axis=-1)
    clear = ordered[..., -1] - ordered[..., -2] > 1e-4  # a tie within float error may go either way
    assert clear.mean() > 0.9
    assert (mask[clear] == scores.argmax(-1)[clear]).all()
    assert page.evaluate("window.edgetool.lastResult.probabilities") is None
    legend = page.locator("#seg-legend li").evaluate_all("(els) => els.map((e) => Number(e.dataset.class))")
    assert set(legend) == set(np.unique(mask).tolist())
    assert page.locator("#heads .head").count() == 0  # the mask, not 1,024 numbers
    _assert_same_origin(page, url)


def _write_wav(path: Path, samples: np.ndarray, rate: int) -> np.ndarray:
    """16-bit mono PCM; returns the float samples a decoder gives back (int16 / 32768)."""
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return pcm.astype(np.float32) / 32768


def test_wav_upload_predicts_like_tensorflow_on_the_decoded_samples(task_site, open_site, tmp_path):
    model, site, _ = task_site("audio", "--sample-rate", str(models.RATE))
    config = json.loads((site / "demo-config.json").read_text())
    assert config["inputs"][0]["kind"] == "audio" and config["sampleRate"] == models.RATE
    page, url = open_site(site)
    assert page.locator("#fields input, #fields textarea").count() == 0  # no 2,048-value form
    t = np.arange(1500) / models.RATE  # shorter than the model's input: zero-padded at the end
    decoded = _write_wav(tmp_path / "tone.wav", 0.6 * np.sin(2 * np.pi * 440 * t), models.RATE)
    page.set_input_files("#audio-file", str(tmp_path / "tone.wav"))
    page.wait_for_function("window.edgetool.lastResult !== null")
    fed = np.array(page.evaluate("Array.from(window.edgetool.lastInput.waveform.values)"), np.float32)
    want_in = np.concatenate([decoded, np.zeros(models.SAMPLES - len(decoded), np.float32)])
    # decoders scale int16 by 1/32768 or 1/32767 (Chromium): within one 16-bit step of the file's samples
    np.testing.assert_allclose(fed, want_in, atol=1 / 32768)
    assert (fed[len(decoded) :] == 0).all()
    got = np.array(page.evaluate("window.edgetool.lastResult.probabilities"))
    np.testing.assert_allclose(got, models.serving_outputs(model, fed[None])[0], atol=EXACT)
    drawn = page.evaluate("""() => { const c = document.getElementById('waveform');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 2] > 150) n++; return n; }""")
    assert drawn > 100  # the waveform is drawn
    _assert_same_origin(page, url)


def test_audio_without_a_sample_rate_refuses_uploads_and_says_why(task_site, open_site):
    _, site, _ = task_site("audio")
    page, _ = open_site(site)
    assert page.locator("#audio-file").is_disabled()
    assert "--sample-rate" in page.locator("#audio-note").inner_text()


def test_regression_values_are_shown_with_their_names(task_site, open_site):
    model, site, _ = task_site("regression", "--task", "regression")
    page, _ = open_site(site)
    x = np.array([[0.5, -1, 2, 0.25, 1]], np.float32)
    result = page.evaluate("(v) => window.edgetool.predict(v)", x[0].tolist())
    want = models.serving_outputs(model, x)[0]
    np.testing.assert_allclose(result["outputs"]["dense"]["values"], want, atol=EXACT)
    assert result["probabilities"] is None
    names = page.locator("#values dt").all_inner_texts()
    values = [float(v) for v in page.locator("#values dd").all_inner_texts()]
    assert names == ["price", "area"]
    np.testing.assert_allclose(values, want, rtol=1e-5, atol=1e-6)


def test_embedding_is_shown_as_a_vector_not_a_class(task_site, open_site):
    model, site, _ = task_site("embedding")
    config = json.loads((site / "demo-config.json").read_text())
    assert config["task"]["name"] == "embedding", config["task"]  # read off the graph: x * rsqrt(sum(x²))
    page, _ = open_site(site)
    x = np.array([[0.5, -1, 2, 0.25, 1, -0.5]], np.float32)
    result = page.evaluate("(v) => window.edgetool.predict(v)", x[0].tolist())
    want = models.serving_outputs(model, x)[0]
    (values,) = [h["values"] for h in result["outputs"].values()]
    np.testing.assert_allclose(values, want, atol=EXACT)
    assert result["probabilities"] is None and page.locator("#top li").count() == 0
    shown = dict(zip(page.locator("#values dt").all_inner_texts(), page.locator("#values dd").all_inner_texts()))
    assert "cosine" in shown["embedding"] and float(shown["L2 norm"]) == pytest.approx(1.0, abs=1e-3)
    assert float(shown["[0]"]) == pytest.approx(want[0], rel=1e-3, abs=1e-4)


def test_wav_at_another_rate_is_resampled_to_the_model_rate(task_site, open_site, tmp_path):
    _, site, _ = task_site("audio", "--sample-rate", str(models.RATE))
    page, _ = open_site(site)
    rate, tone = 16000, 500.0  # twice the model's rate: the browser resamples to 8 kHz
    t = np.arange(rate // 2) / rate  # 0.5 s: 4,000 samples at 8 kHz, cut to the model's 2,048
    _write_wav(tmp_path / "tone16k.wav", 0.5 * np.sin(2 * np.pi * tone * t), rate)
    page.set_input_files("#audio-file", str(tmp_path / "tone16k.wav"))
    page.wait_for_function("window.edgetool.lastResult !== null")
    fed = np.array(page.evaluate("Array.from(window.edgetool.lastInput.waveform.values)"), np.float64)
    assert fed.shape == (models.SAMPLES,)
    spectrum = np.abs(np.fft.rfft(fed * np.hanning(len(fed))))
    peak = np.fft.rfftfreq(len(fed), 1 / models.RATE)[spectrum.argmax()]
    assert abs(peak - tone) <= models.RATE / models.SAMPLES  # within one FFT bin: 500 Hz, not 1 kHz (unresampled)
    assert 0.45 <= np.abs(fed[100:-100]).max() <= 0.55


def test_video_input_gets_a_note_not_a_form(task_site, open_site):
    _, site, _ = task_site("video")
    page, _ = open_site(site)
    note = page.locator("#video-note").inner_text()
    assert "video" in note and "predict(" in note
    assert page.locator("#fields input, #fields textarea").count() == 0
    x = np.zeros((1, 4, 8, 8, 3), np.float32)
    result = page.evaluate("(v) => window.edgetool.predict(v)", x.ravel().tolist())
    assert len(result["probabilities"]) == 2
