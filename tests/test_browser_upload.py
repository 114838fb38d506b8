"""In real Chromium: the page shows what the model sees (issue 20 §4, §6).

An image uploaded through the page's file input is resampled once, straight to the model's H×W as the Python image
readers resample it (Pillow convert + resize), and turned into model values by the input contract (mean/std per
channel, channel order); the page's prediction then equals `predict()` on those values and the same .tflite run
natively by ai_edge_litert on pixels this test resizes itself. Photo-like models get upload/camera without the
drawing UI; the header and footer name the engine running; LiteRT.js's INFO lines are not console errors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from edge_tool.demo.serve import start_server
from tests.builds import run_script
from tests.edgetool_runs import edgetool_in_process
from tests.oracles.litert_outputs import litert_outputs
from tests.test_browser import ARTIFACTS, CHROMIUM, FLAGS, _require_chromium, open_site  # noqa: F401  (a fixture)
from tests.test_browser_phone import PHONE, SCREENSHOTS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PROB_TOL = 1e-3
# The contract of the photo model below, as demo-config.json carries it: BGR channels, (p - mean) / std per channel
MEAN_BGR = [103.939, 116.779, 123.68]
STD_BGR = [57.375, 57.12, 58.395]

# A tiny tf_keras CNN on 32x32 colour pictures of digits (sklearn's digits, tinted ink on tinted paper), its
# normalisation outside the graph (BGR, mean/std), and the upload set: 18 held-out digits drawn at many sizes and
# aspect ratios (PNG and JPEG) and 6 crops of sklearn's two real photos.
_PHOTO_MODEL_SCRIPT = """
import sys, numpy as np, tf_keras as keras
from pathlib import Path
from PIL import Image
from sklearn.datasets import load_digits, load_sample_images
keras.utils.set_random_seed(0)
out, files = Path(sys.argv[1]), Path(sys.argv[2])
MEAN, STD = np.array(%r, np.float32), np.array(%r, np.float32)
d = load_digits()
rng = np.random.default_rng(0)

def colour_digit(img8):
    paper, ink = rng.integers(140, 256, 3), rng.integers(0, 110, 3)
    return (paper + (ink - paper) * (img8[..., None] / 16.0)).round().astype(np.uint8)

def to_model(rgb):
    return (rgb[..., ::-1].astype(np.float32) - MEAN) / STD

n = 1500
x = np.stack([np.asarray(Image.fromarray(colour_digit(im)).resize((32, 32), Image.BILINEAR)) for im in d.images[:n]])
inp = keras.Input((32, 32, 3), name="image")
h = keras.layers.Conv2D(12, 3, strides=2, padding="same", activation="relu")(inp)
h = keras.layers.Conv2D(24, 3, strides=2, padding="same", activation="relu")(h)
probs = keras.layers.Dense(10, activation="softmax", name="probs")(keras.layers.Flatten()(h))
model = keras.Model(inp, probs)
model.compile("adam", "sparse_categorical_crossentropy")
model.fit(to_model(x), d.target[:n], epochs=8, batch_size=32, verbose=0)
model.save(out, save_format="tf")
np.savez(out / "calibration.npz", x=to_model(x[:64]))
(out / "labels.txt").write_text("".join(f"digit {i}\\n" for i in range(10)))
files.mkdir(parents=True)
sizes = [(37, 41), (96, 96), (150, 120), (64, 48), (33, 33), (200, 260), (45, 90), (128, 64), (300, 300)]
for i, im in enumerate(d.images[n:n + 18]):
    big = Image.fromarray(colour_digit(im)).resize(sizes[i %% len(sizes)], Image.BICUBIC)
    big.save(files / f"digit{i:02d}-{d.target[n + i]}.{'jpg' if i %% 3 == 2 else 'png'}", quality=92)
china, flower = load_sample_images().images
crops = [china[40:300, 100:360], china[200:427:2, 300:640:2], flower[50:350, 200:500], flower[::4, ::4],
         china[0:120, 0:200], flower[300:427, 0:300:3]]
for i, c in enumerate(crops):
    Image.fromarray(np.ascontiguousarray(c)).save(files / f"photo{i}.{'jpg' if i %% 2 else 'png'}", quality=90)
""" % (MEAN_BGR, STD_BGR)


@pytest.fixture(scope="module")
def pw_driver():
    """One Playwright driver for the module (a second sync_playwright cannot start beside it)."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser_context(pw_driver, tmp_path_factory):
    """A persistent Chromium profile, as tests/test_browser.py opens it (open_site uses it)."""
    context = pw_driver.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=str(CHROMIUM),
        args=FLAGS,
        headless=True,
        viewport={"width": 1100, "height": 720},
    )
    yield context
    context.close()


@pytest.fixture(scope="module")
def photo_model(tmp_path_factory) -> tuple[Path, list[Path]]:
    """(SavedModel of the colour-digits CNN, the 24 image files to upload)."""
    root = tmp_path_factory.mktemp("photo")
    run_script(_PHOTO_MODEL_SCRIPT, root / "model", root / "files")
    files = sorted((root / "files").iterdir())
    assert len(files) == 24
    return root / "model", files


@pytest.fixture(scope="module")
def photo_site(photo_model, tmp_path_factory) -> Path:
    """Its --litert demo site, with the input contract in demo-config.json (BGR, mean/std, bilinear resize)."""
    site = tmp_path_factory.mktemp("photo-site") / "site"
    proc = edgetool_in_process("demo", photo_model[0], "-o", site, "--litert", "--title", "Colour digits")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((site / "demo-config.json").read_text())
    for spec in (config["input"], *config["inputs"]):  # the fields `edgetool demo` writes from the model's contract
        spec.update(mean=MEAN_BGR, std=STD_BGR, channelOrder="BGR", resize="bilinear")
    (site / "demo-config.json").write_text(json.dumps(config))
    return site


def _oracle_values(path: Path) -> np.ndarray:
    """The model's input for an image file, computed here: Pillow decode, RGB, bilinear resize, BGR, (p - mean) / std."""
    from PIL import Image

    with Image.open(path) as img:
        pixels = np.asarray(img.convert("RGB").resize((32, 32), Image.BILINEAR), dtype=np.float32)
    return ((pixels[..., ::-1] - np.array(MEAN_BGR, np.float32)) / np.array(STD_BGR, np.float32))[None]


def _native(tflite: Path, x: np.ndarray) -> np.ndarray:
    return litert_outputs(tflite, x)[0]


def _upload(page, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Upload through the page's file input -> (the values the page fed, its probabilities)."""
    page.evaluate("window.__before = window.edgetool.lastResult")
    page.set_input_files("#file", str(path))
    page.wait_for_function("window.edgetool.lastResult !== window.__before")
    got = page.evaluate("""() => { const r = window.edgetool.lastResult;
        return {x: Array.from(window.edgetool.lastInput.image.values),
                p: Array.isArray(r.probabilities[0]) ? r.probabilities[0] : r.probabilities}; }""")
    return np.array(got["x"], np.float32).reshape(1, 32, 32, 3), np.array(got["p"])


def _predict(page, x: np.ndarray) -> np.ndarray:
    result = page.evaluate("(v) => window.edgetool.predict(v)", x.ravel().tolist())
    probs = result["probabilities"]
    return np.array(probs[0] if isinstance(probs[0], list) else probs)


@pytest.mark.parametrize("engine", ["litert-fp32", "tfjs"])
def test_uploads_predict_like_predict_and_native_litert(photo_model, photo_site, open_site, engine, tmp_path):
    _, files = photo_model
    page, _ = open_site(photo_site)
    assert page.evaluate("(e) => window.edgetool.setEngine(e)", engine) == engine
    tflite = photo_site / "model" / "model-fp32-b1.tflite"
    first = None
    for path in files:
        want = _oracle_values(path)
        fed, probs_upload = _upload(page, path)
        first = fed if first is None else first
        # the page fed exactly what the Python readers would (Pillow's resize, byte for byte, then the contract)
        assert float(np.abs(fed - want).max()) <= 1e-5, path.name
        native = _native(tflite, want)
        probs_api = _predict(page, want)  # (an API call: before, it switched the pad's smoothing off for later uploads)
        assert probs_upload.argmax() == native.argmax() == probs_api.argmax(), path.name
        assert float(np.abs(probs_upload - native).max()) <= PROB_TOL, path.name
        assert float(np.abs(probs_upload - probs_api).max()) <= PROB_TOL, path.name
    # no hidden state: the first upload came before any API call; after all of them it is fed exactly the same
    np.testing.assert_array_equal(_upload(page, files[0])[0], first)


def test_photo_model_gets_upload_first_and_names_its_engine(photo_model, photo_site, open_site, tmp_path):
    _, files = photo_model
    page, _ = open_site(photo_site)
    assert page.locator("#image-input").get_attribute("data-style") == "photo"
    assert page.locator("#clear").is_hidden() and page.locator("#invert").is_hidden()  # no digit-drawing UI
    assert page.locator("label[for=file]").is_visible()
    assert "Draw" not in page.locator("#input-card").inner_text()
    assert page.evaluate("(e) => window.edgetool.setEngine(e)", "litert-fp32") == "litert-fp32"
    assert page.locator("#engine-name").inner_text().startswith("LiteRT.js fp32 (@litertjs/core 2.5.3")
    assert "\u00b7 LiteRT.js fp32 (@litertjs/core 2.5.3" in page.locator("#model-info").inner_text()
    assert page.evaluate("(e) => window.edgetool.setEngine(e)", "tfjs") == "tfjs"
    backend = page.evaluate("window.edgetool.backend")
    assert page.locator("#engine-name").inner_text() == f"TensorFlow.js 4.22.0 ({backend} backend)"
    assert page.locator("#model-info").inner_text().endswith(f"TensorFlow.js 4.22.0 ({backend} backend)")
    box = page.locator("#pad").bounding_box()  # the pad only displays: dragging over it predicts nothing
    page.mouse.move(box["x"] + 20, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 200, box["y"] + 200, steps=5)
    page.mouse.up()
    assert page.evaluate("window.edgetool.lastInput") is None
    _upload(page, files[0])
    assert page.locator("#top li").count() == 3
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "demo-photo-upload.png"), full_page=True)
    shutil.copyfile(ARTIFACTS / "demo-photo-upload.png", tmp_path / "demo-photo-upload.png")


def test_litert_page_logs_no_console_error(photo_site, browser_context):
    server, thread, url = start_server(photo_site, "127.0.0.1", 0)
    page = browser_context.new_page()
    messages = []
    page.on("console", lambda m: messages.append((m.type, m.text)))
    try:
        page.goto(url)
        info = page.evaluate("window.edgetool.ready")
        assert {"litert", "litert-fp32"} <= set(info["engines"])
    finally:
        page.close()
        server.shutdown()
        server.server_close()
        thread.join(5)
    errors = [text for kind, text in messages if kind == "error"]
    assert errors == [], errors
    routed = [text for kind, text in messages if kind == "debug" and text.startswith("LiteRT.js: INFO:")]
    assert routed, messages  # LiteRT.js did log its start-up; it went to console.debug


@pytest.fixture(scope="module")
def digits_site(digits_demo_site) -> Path:
    return digits_demo_site


def test_digit_upload_on_the_pad_is_resampled_once_and_inverts(digits_model, digits_site, open_site, tmp_path):
    """A grey 8x8 model keeps its pad; an upload is Pillow's L conversion + bilinear resize, inverted when asked."""
    from PIL import Image
    from sklearn.datasets import load_digits

    page, _ = open_site(digits_site)
    assert page.locator("#image-input").get_attribute("data-style") == "draw"
    assert page.locator("#clear").is_visible() and page.locator("#invert").is_visible()
    digits = load_digits()
    paths = []
    for i, (w, h) in enumerate([(40, 40), (90, 60), (33, 77)]):  # dark ink on white paper, as photographed digits are
        img = Image.fromarray((255 - digits.images[1700 + i] * 255 / 16).astype(np.uint8)).resize((w, h), Image.BICUBIC)
        paths.append(tmp_path / f"digit{i}.png")
        img.convert("RGB").save(paths[-1])
    page.check("#invert")
    for path in paths:
        page.evaluate("window.__before = window.edgetool.lastResult")
        page.set_input_files("#file", str(path))
        page.wait_for_function("window.edgetool.lastResult !== window.__before")
        fed = np.array(page.evaluate("Array.from(Object.values(window.edgetool.lastInput)[0].values)"))
        with Image.open(path) as img:
            want = 255.0 - np.asarray(img.convert("L").resize((8, 8), Image.BILINEAR), dtype=np.float64).ravel()
        np.testing.assert_allclose(fed, want, atol=1e-4)  # the digits model takes 0..255 pixels (its range)
    page.evaluate("window.__before = window.edgetool.lastResult")
    page.uncheck("#invert")
    page.wait_for_function("window.edgetool.lastResult !== window.__before")
    fed = np.array(page.evaluate("Array.from(Object.values(window.edgetool.lastInput)[0].values)"))
    np.testing.assert_allclose(fed, 255.0 - want, atol=1e-4)


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_camera_frame_is_cropped_to_the_centre_and_resampled_once(photo_site, pw_driver, tmp_path, device):
    """A fake camera (Chromium's file-backed capture device) shows a known black-and-white frame: the page feeds its
    centred square crop resized by Pillow's bilinear filter (black and white survive the camera's YUV exactly), at
    the model's input size, on a desktop and on a phone (tests/test_browser_phone.py's emulation, tapped)."""
    from PIL import Image

    width, height = 160, 120
    frame = np.zeros((height, width), np.uint8)
    frame[20:70, 30:60] = 255  # left of centre, inside the crop
    frame[90:110, 100:150] = 255  # lower right, cut by the crop's right edge
    y4m = tmp_path / "camera.y4m"
    planes = frame.tobytes() + bytes([128]) * (width * height // 2)  # grey: Y only, neutral chroma (4:2:0)
    y4m.write_bytes(f"YUV4MPEG2 W{width} H{height} F30:1 Ip A1:1 C420jpeg\n".encode() + (b"FRAME\n" + planes) * 3)
    camera = [
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-video-capture={y4m}",
    ]
    server, thread, url = start_server(photo_site, "127.0.0.1", 0)
    browser = pw_driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS + camera, headless=True)
    try:
        page = browser.new_context(**(PHONE if device == "phone" else {})).new_page()
        page.goto(url + "?engine=tfjs")
        page.evaluate("window.edgetool.ready")
        press = page.tap if device == "phone" else page.click
        press("#camera")
        page.wait_for_function("document.getElementById('video').videoWidth > 0")
        press("#snap")
        page.wait_for_function("window.edgetool.lastInput !== null")
        assert page.evaluate("window.edgetool.lastInput.image.shape") == [1, 32, 32, 3]  # the model's input size
        assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")  # the video fits on a phone
        if device == "phone":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "phone-camera.png"), full_page=True)
        fed = np.array(page.evaluate("Array.from(window.edgetool.lastInput.image.values)")).reshape(32, 32, 3)
    finally:
        browser.close()
        server.shutdown()
        server.server_close()
        thread.join(5)
    pixels = (fed * np.array(STD_BGR) + np.array(MEAN_BGR))[..., ::-1]  # back to RGB 0..255
    crop = (20, 0, 140, 120)  # the centred 120x120 square of the 160x120 frame
    want = np.asarray(Image.fromarray(frame).convert("RGB").resize((32, 32), Image.BILINEAR, box=crop), np.float64)
    assert float(np.abs(pixels - want).max()) <= 1e-3
