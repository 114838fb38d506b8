"""edgetool demo: the static PWA site (files, manifest, icons, service worker, page config) and its refusals."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image  # noqa: TID253  (tests are not the CLI: no start-up to keep light)
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.core.env import import_tf
from edge_tool.demo import vendor
from edge_tool.demo.footprint import footprint
from edge_tool.demo.litert_site import LITERT_MODULES
from edge_tool.demo.model import Tensor, output_ui
from edge_tool.demo.site import TEMPLATE_FILES, content_version, site_files
from edge_tool.tfjs_writer.export import export_tfjs
from tests.edgetool_runs import REPO, edgetool_in_process
from tests.page_task_models import gelu_model

RUNTIME = {"vendor/" + name for name in vendor.VENDOR_FILES}
FIXED_FILES = {
    "index.html",
    "app.js",
    "app.css",
    "demo-config.json",
    "manifest.webmanifest",
    "sw.js",
    "icons/icon-192.png",
    "icons/icon-512.png",
    "icons/icon-maskable-512.png",
    "model/model.json",
} | RUNTIME
FIXED_FILES |= set(TEMPLATE_FILES)  # the page's ES modules (tests/test_page_js.py: exactly those app.js imports)


def sw_precache(site: Path) -> tuple[str, list[str]]:
    """(VERSION, PRECACHE list) parsed out of the generated sw.js."""
    text = (site / "sw.js").read_text()
    version = re.search(r"const VERSION = \"([0-9a-f]+)\";", text).group(1)
    precache = json.loads(re.search(r"const PRECACHE = (\[.*?\]);", text, re.S).group(1))
    return version, precache


def sw_on_demand(site: Path) -> list[str]:
    """The files the generated sw.js caches when first fetched (ON_DEMAND)."""
    return json.loads(re.search(r"new Set\((\[.*?\])\.map", (site / "sw.js").read_text(), re.S).group(1))


def wasm_binaries(site: Path) -> set[str]:
    """The wasm builds of which a browser runs one per runtime (and LiteRT.js's loader script beside each)."""
    wasm = {p for p in site_files(site) if p.endswith(".wasm")}
    return wasm | {p.removesuffix(".wasm") + ".js" for p in wasm if "/litert/" in p}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tfjs_models(digits_model, tmp_path_factory) -> dict[str, Path]:
    """The digits model converted to tfjs twice: float32 weights and float16 weights."""
    root = tmp_path_factory.mktemp("tfjs")
    export_tfjs(digits_model, root / "fp32")
    export_tfjs(digits_model, root / "fp16", weight_quant="float16")
    return {"fp32": root / "fp32", "fp16": root / "fp16"}


@pytest.fixture(scope="module")
def saved_model_site(digits_model, tmp_path_factory) -> Path:
    """Site built by the CLI from the SavedModel (converted on the fly, labels.txt picked up)."""
    site = tmp_path_factory.mktemp("sites") / "site"
    proc = edgetool_in_process("demo", digits_model, "-o", site, "--title", "Digits <demo>")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "edgetool serve" in proc.stdout
    return site


@pytest.fixture(scope="module")
def two_input_model(tmp_path_factory) -> Path:
    """A tiny tf.Module SavedModel with two inputs (a, b)."""
    tf = import_tf()

    class TwoInputs(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, 2], tf.float32, name="a"),
                tf.TensorSpec([None, 2], tf.float32, name="b"),
            ]
        )
        def serve(self, a, b):
            return {"scores": a + b}

    path = tmp_path_factory.mktemp("two") / "model"
    two = TwoInputs()
    tf.saved_model.save(two, str(path), signatures={"serving_default": two.serve})
    return path


def test_site_holds_page_runtime_model_icons_and_nothing_else(saved_model_site):
    files = set(site_files(saved_model_site))
    shards = {f for f in files if f.startswith("model/") and f.endswith(".bin")}
    assert shards, files
    assert files == FIXED_FILES | shards
    for name, src in vendor.vendored_files().items():
        assert digest(saved_model_site / "vendor" / name) == digest(src)
    for name in TEMPLATE_FILES:
        if name != "index.html":
            assert digest(saved_model_site / name) == digest(vendor.web_demo_dir() / name), name


def test_manifest_is_installable_shape(saved_model_site):
    manifest = json.loads((saved_model_site / "manifest.webmanifest").read_text())
    assert manifest["name"] == "Digits <demo>"
    assert 0 < len(manifest["short_name"]) <= 12
    assert manifest["start_url"] == "./" and manifest["scope"] == "./"
    assert manifest["display"] == "standalone"
    assert re.fullmatch(r"#[0-9a-f]{6}", manifest["theme_color"])
    assert re.fullmatch(r"#[0-9a-f]{6}", manifest["background_color"])
    by_purpose = {(i["sizes"], i["purpose"]) for i in manifest["icons"]}
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= by_purpose
    for icon in manifest["icons"]:
        with Image.open(saved_model_site / icon["src"]) as img:
            assert img.format == "PNG" and icon["type"] == "image/png"
            assert f"{img.width}x{img.height}" == icon["sizes"]
            if icon["purpose"] == "maskable":  # full-bleed: no transparent corners to be cropped badly
                assert img.convert("RGBA").getpixel((0, 0))[3] == 255


def test_index_escapes_title_and_links_only_site_files(saved_model_site):
    index = (saved_model_site / "index.html").read_text()
    assert "<title>Digits &lt;demo&gt;</title>" in index
    assert '<link rel="manifest" href="manifest.webmanifest">' in index
    refs = re.findall(r'(?:src|href)="([^"]+)"', index)
    assert refs and all((saved_model_site / r).is_file() for r in refs), refs


def test_service_worker_precaches_every_site_file_but_the_wasm_builds(saved_model_site):
    version, precache = sw_precache(saved_model_site)
    lazy = wasm_binaries(saved_model_site)  # tfjs-backend-wasm's three binaries: a browser loads one
    assert len(lazy) == 3 and sorted(sw_on_demand(saved_model_site)) == sorted(lazy)
    assert sorted(precache) == sorted(set(site_files(saved_model_site)) - lazy)
    assert version == content_version(saved_model_site)


def test_page_config_describes_the_signature(saved_model_site, digits_model):
    config = json.loads((saved_model_site / "demo-config.json").read_text())
    inp, out = config["input"], config["output"]
    assert (inp["kind"], inp["height"], inp["width"], inp["channels"]) == ("image", 8, 8, 1)
    assert (inp["name"], inp["dtype"], inp["tfjsDtype"], inp["shape"]) == (
        "pixels",
        "float32",
        "float32",
        [None, 8, 8, 1],
    )
    assert inp["range"] == [0, 255]
    assert out["classes"] == 10 and out["shape"] == [None, 10]
    assert config["labels"] == (digits_model / "labels.txt").read_text().split()
    assert config["runtime"] == vendor.pinned_versions()  # what the site ships is what package.json pins
    model_json = json.loads((saved_model_site / config["modelUrl"]).read_text())
    assert inp["tensor"] == model_json["signature"]["inputs"]["pixels"]["name"]
    assert out["tensor"] == model_json["signature"]["outputs"]["probs"]["name"]


def test_tfjs_input_is_copied_and_cache_name_follows_the_model(tfjs_models, tmp_path):
    runner = CliRunner()
    sites = {}
    for name, args in {"a": ["fp32"], "b": ["fp32"], "c": ["fp16"]}.items():
        sites[name] = tmp_path / name
        result = runner.invoke(app, ["demo", str(tfjs_models[args[0]]), "-o", str(sites[name])])
        assert result.exit_code == 0, result.output
    for rel in ["model.json", "group1-shard1of1.bin"]:
        assert digest(sites["a"] / "model" / rel) == digest(tfjs_models["fp32"] / rel)
    versions = {name: sw_precache(site)[0] for name, site in sites.items()}
    assert versions["a"] == versions["b"]  # deterministic build
    assert versions["a"] != versions["c"]  # new weights -> new cache, old one deleted on activate
    config = json.loads((sites["a"] / "demo-config.json").read_text())
    assert config["labels"] == [] and config["sourceFormat"] == "tfjs-graph-model"


def test_force_replaces_an_existing_site(tfjs_models, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "old.txt").write_text("old")
    (site / ".edgetool-output").write_text("")  # as if an earlier edgetool run wrote it
    result = CliRunner().invoke(
        app,
        [
            "demo",
            str(tfjs_models["fp32"]),
            "-o",
            str(site),
            "--force",
            "--labels",
            str(Path(__file__).parent / "data" / "nonexistent.txt"),
        ],
    )
    assert result.exit_code == 2 and (site / "old.txt").is_file()  # bad --labels: nothing touched
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"digit {i}" for i in range(10)))
    result = CliRunner().invoke(
        app, ["demo", str(tfjs_models["fp32"]), "-o", str(site), "--force", "--labels", str(labels)]
    )
    assert result.exit_code == 0, result.output
    assert not (site / "old.txt").exists()
    assert json.loads((site / "demo-config.json").read_text())["labels"][3] == "digit 3"


def test_flat_input_model_gets_a_form(flat_model, tmp_path):
    result = CliRunner().invoke(app, ["demo", str(flat_model), "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "s" / "demo-config.json").read_text())
    assert (config["input"]["kind"], config["input"]["features"]) == ("flat", 4)
    assert config["labels"] == ["setosa", "versicolor", "virginica"]


def _assert_refused(args: list[str], out: Path, *needles: str) -> None:
    result = CliRunner().invoke(app, ["demo", *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    for needle in needles:
        assert needle in text, text
    siblings = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    assert siblings == []  # no temp dirs left behind


def test_missing_model_is_refused(tmp_path):
    _assert_refused([str(tmp_path / "nope")], tmp_path / "site", "nothing is there")
    assert not (tmp_path / "site").exists()


def test_directory_that_is_no_model_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "notes.txt").write_text("x")
    _assert_refused([str(tmp_path / "m")], tmp_path / "site", "model.json", "saved_model.pb", "notes.txt")
    assert not (tmp_path / "site").exists()


def test_existing_site_without_force_is_refused_untouched(tfjs_models, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "keep.txt").write_text("keep")
    _assert_refused([str(tfjs_models["fp32"])], site, "--force")
    assert [p.name for p in site.iterdir()] == ["keep.txt"]


def test_label_count_mismatch_is_refused(tfjs_models, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\n")
    _assert_refused([str(tfjs_models["fp32"]), "--labels", str(labels)], tmp_path / "site", "2 labels", "10 classes")
    assert not (tmp_path / "site").exists()


def test_two_input_model_gets_a_form_per_input(two_input_model, tmp_path):
    result = CliRunner().invoke(app, ["demo", str(two_input_model), "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "s" / "demo-config.json").read_text())
    assert [(i["name"], i["kind"], i["features"], i["feedShape"]) for i in config["inputs"]] == [
        ("a", "flat", 2, [1, 2]),
        ("b", "flat", 2, [1, 2]),
    ]
    assert [(o["name"], o["kind"]) for o in config["outputs"]] == [("scores", "classes")]


def test_litert_engine_feeds_two_inputs_each_by_name(two_input_model, tmp_path):
    data = tmp_path / "calib.npz"
    np.savez(data, a=np.ones((4, 2), np.float32), b=np.zeros((4, 2), np.float32))
    result = CliRunner().invoke(
        app, ["demo", str(two_input_model), "--litert", "--calibration", str(data), "-o", str(tmp_path / "site")]
    )
    assert result.exit_code == 0, result.output
    lrt = json.loads((tmp_path / "site" / "demo-config.json").read_text())["litert"]
    for spec in (lrt, *lrt["variants"]):
        assert sorted((i["key"], i["feed"], i["shape"]) for i in spec["inputs"]) == [
            ("a", "a", [1, 2]),
            ("b", "b", [1, 2]),
        ]


def test_litert_engine_refuses_an_open_height_width_with_the_way_out(odd_models, tmp_path):
    _assert_refused(
        [str(odd_models["open_hw"]), "--litert"],
        tmp_path / "site",
        "inputs have a fixed shape",
        "image has an open",
        "Drop --litert",
    )
    assert not (tmp_path / "site").exists()


@pytest.fixture(scope="module")
def odd_models(tmp_path_factory) -> dict[str, Path]:
    """tf.Module SavedModels the demo must still drive: open H×W, int token ids + two heads, an open sequence length."""
    tf = import_tf()
    root = tmp_path_factory.mktemp("odd")

    class OpenHW(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32, name="image")])
        def serve(self, image):
            return {"probs": tf.nn.softmax(tf.reduce_mean(image, axis=[1, 2]))}

    class TokensTwoHeads(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, 6], tf.int32, name="tokens"),
                tf.TensorSpec([None, 2, 3], tf.float32, name="extra"),
            ]
        )
        def serve(self, tokens, extra):
            t = tf.cast(tokens, tf.float32)
            return {
                "label": tf.nn.softmax(t[:, :4]),
                "score": tf.reduce_sum(t, 1, keepdims=True) + tf.reduce_sum(extra),
            }

    class OpenLength(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="sequence")])
        def serve(self, sequence):
            return {"probs": tf.nn.softmax(sequence[:, :2])}

    paths = {}
    for name, cls in {"open_hw": OpenHW, "tokens": TokensTwoHeads, "open_length": OpenLength}.items():
        module = cls()
        paths[name] = root / name
        tf.saved_model.save(module, str(paths[name]), signatures={"serving_default": module.serve})
    return paths


def test_open_height_width_is_fed_at_input_size(odd_models, tmp_path):
    for args, size in (([], [224, 224]), (["--input-size", "40x24"], [40, 24])):
        site = tmp_path / f"s{size[0]}"
        result = CliRunner().invoke(app, ["demo", str(odd_models["open_hw"]), "-o", str(site), *args])
        assert result.exit_code == 0, result.output
        inp = json.loads((site / "demo-config.json").read_text())["inputs"][0]
        assert (inp["kind"], [inp["height"], inp["width"]], inp["resized"]) == ("image", size, True)
        assert inp["feedShape"] == [1, *size, 3] and inp["shape"] == [None, None, None, 3]


@pytest.mark.parametrize("bad", ["224", "0x10", "10x5000", "axb", "10x10x3"])
def test_bad_input_size_is_refused(odd_models, tmp_path, bad):
    _assert_refused(
        [str(odd_models["open_hw"]), "--input-size", bad], tmp_path / "site", "--input-size must be HxW", repr(bad)
    )
    assert not (tmp_path / "site").exists()


def test_integer_inputs_and_every_head_are_described(odd_models, tmp_path):
    result = CliRunner().invoke(app, ["demo", str(odd_models["tokens"]), "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "s" / "demo-config.json").read_text())
    inputs = {i["name"]: i for i in config["inputs"]}
    assert (inputs["tokens"]["kind"], inputs["tokens"]["integer"], inputs["tokens"]["tfjsDtype"]) == (
        "flat",
        True,
        "int32",
    )
    assert (inputs["extra"]["kind"], inputs["extra"]["features"], inputs["extra"]["feedShape"]) == (
        "tensor",
        6,
        [1, 2, 3],
    )
    assert [(o["name"], o["kind"]) for o in config["outputs"]] == [("label", "classes"), ("score", "values")]
    assert config["output"]["name"] == "label"  # labels and predict()'s ranking apply to the class head


def test_open_non_image_dimension_is_refused_with_the_reason(odd_models, tmp_path):
    _assert_refused(
        [str(odd_models["open_length"])],
        tmp_path / "site",
        "'sequence'",
        "[?,?]",
        "every dimension after the batch fixed",
        "--input-size",
    )
    assert not (tmp_path / "site").exists()


def test_missing_runtime_names_the_vendor_command(tfjs_models, tmp_path, monkeypatch):
    template = tmp_path / "template"
    template.mkdir()
    src = vendor.web_demo_dir()
    for name in ["index.html", "package.json", "package-lock.json"]:
        shutil.copyfile(src / name, template / name)
    monkeypatch.setattr(vendor, "web_demo_dir", lambda: template)
    _assert_refused([str(tfjs_models["fp32"])], tmp_path / "site", "python scripts/vendor_runtimes.py", "not vendored")
    assert not (tmp_path / "site").exists()


def test_vendor_status_tracks_the_lockfile(tmp_path):
    src = vendor.web_demo_dir()
    assert vendor.vendor_status(src) is None  # scripts/setup.sh vendored the pinned runtime
    assert vendor.ensure_vendored(src, quiet=True) is False  # up to date: no npm run, no copy
    copy = tmp_path / "web_demo"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("node_modules"))
    assert vendor.vendor_status(copy) is None
    lock = json.loads((copy / "package-lock.json").read_text())
    lock["name"] = "changed"
    (copy / "package-lock.json").write_text(json.dumps(lock))
    assert "different web_demo/package-lock.json" in vendor.vendor_status(copy)
    (copy / "vendor" / "tf.min.js").unlink()
    assert "tf.min.js" in vendor.vendor_status(copy)


def test_vendor_script_is_the_setup_step():
    """scripts/vendor_runtimes.py (what setup.sh runs): nothing to do on a vendored tree, exit 2 on a bad argument."""
    script = REPO / "scripts" / "vendor_runtimes.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and "already vendored" in done.stdout, done.stdout + done.stderr
    bad = subprocess.run([sys.executable, str(script), "--force"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "unknown argument(s) --force" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert vendor.VENDOR_COMMAND == f"python scripts/{script.name}"  # what every "not vendored" error tells you


def test_package_json_pins_exact_versions():
    root = vendor.web_demo_dir()
    pins = vendor.pinned_versions(root)
    assert set(pins) == {"@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm", "@tensorflow/tfjs-backend-webgpu"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in pins.values()), pins  # exact, no ^ or ~ ranges
    assert len(set(pins.values())) == 1, pins  # tfjs and its wasm and webgpu backends must be the same release
    lock = json.loads((root / "package-lock.json").read_text())
    for name, version in pins.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


# ---------- --litert: the LiteRT.js engine (fixed-batch-1 int8 .tflite) ----------

LITERT_EXTRA = {*LITERT_MODULES, "model/model-int8-b1.tflite", "model/model-fp32-b1.tflite"} | {
    "vendor/" + name for name in vendor.LITERT_FILES
}


@pytest.fixture(scope="module")
def litert_site(digits_model, tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("sites") / "litert"
    proc = edgetool_in_process("demo", digits_model, "-o", site, "--litert")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (site.parent / "demo-stdout.txt").write_text(proc.stdout)
    return site


def test_litert_site_adds_the_engine_runtime_and_a_fixed_batch_int8_model(litert_site, saved_model_site):
    files = set(site_files(litert_site))
    assert files - set(site_files(saved_model_site)) == LITERT_EXTRA
    for name, src in vendor.vendored_litert_files().items():
        assert digest(litert_site / "vendor" / name) == digest(src)
    wasm = sorted(f for f in files if f.endswith(".wasm") and "litert" in f)  # compat, relaxed SIMD, threaded
    assert wasm == sorted(f"vendor/litert/{s.removesuffix('.js')}.wasm" for s in vendor.LITERT_BUILDS.values())
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(litert_site / "model/model-int8-b1.tflite"))
    inp = interp.get_input_details()[0]
    assert inp["shape_signature"].tolist() == [1, 8, 8, 1] and inp["dtype"] == np.float32  # float I/O kept
    assert "int8" in {t["dtype"].__name__ for t in interp.get_tensor_details()}  # full-integer inside
    config = json.loads((litert_site / "demo-config.json").read_text())
    lrt = config["litert"]
    assert (litert_site / lrt["modelUrl"]).is_file() and set(lrt["wasmBuilds"]) == {"compat", "default", "threaded"}
    assert all((litert_site / script).is_file() for script in lrt["wasmBuilds"].values())
    assert lrt["runtime"] == vendor.pinned_litert_versions()
    assert (lrt["input"]["shape"], lrt["output"]["shape"]) == ([1, 8, 8, 1], [1, 10])
    assert (lrt["name"], lrt["label"]) == ("litert", "LiteRT.js int8")
    [fp32] = lrt["variants"]  # the fp32 .tflite beside it, so the page can pick engine x artefact
    assert (fp32["name"], fp32["label"], fp32["modelUrl"]) == (
        "litert-fp32",
        "LiteRT.js fp32",
        "model/model-fp32-b1.tflite",
    )
    assert (fp32["input"]["dtype"], fp32["output"]["dtype"], fp32["input"]["shape"]) == (
        "float32",
        "float32",
        [1, 8, 8, 1],
    )
    for m in (lrt, fp32):
        assert m["sha256"] == hashlib.sha256((litert_site / m["modelUrl"]).read_bytes()).hexdigest()
    fp32_types = {
        t["dtype"].__name__ for t in Interpreter(model_path=str(litert_site / fp32["modelUrl"])).get_tensor_details()
    }
    assert "int8" not in fp32_types
    index = (litert_site / "index.html").read_text()
    import_map = json.loads(re.search(r'<script type="importmap">(.*?)</script>', index).group(1))
    assert all((litert_site / url).is_file() for url in import_map["imports"].values())
    assert index.index('type="importmap"') < index.index('src="app.js"')


def test_litert_service_worker_precaches_the_engine_and_caches_its_builds_on_demand(litert_site):
    version, precache = sw_precache(litert_site)
    lazy = wasm_binaries(litert_site)  # 3 tfjs binaries, 3 LiteRT.js builds (loader + binary)
    assert len(lazy) == 9 and sorted(sw_on_demand(litert_site)) == sorted(lazy)
    assert sorted(precache) == sorted(set(site_files(litert_site)) - lazy) and LITERT_EXTRA - lazy <= set(precache)
    assert version == content_version(litert_site)


def test_demo_reports_the_site_and_first_visit_size(litert_site):
    """A first visit downloads the precache plus one tfjs binary and one LiteRT.js build: ~12 MB of ~32 MB as files,
    under 5 MB gzipped (tests/test_browser_offline.py measures it in Chromium)."""
    size = {rel: (litert_site / rel).stat().st_size for rel in site_files(litert_site)}
    lazy = wasm_binaries(litert_site)
    builds = [
        [p, p.removesuffix(".wasm") + ".js"] for p in lazy if p.startswith("vendor/litert/") and p.endswith(".wasm")
    ]
    largest = max(size[p] for p in lazy if "/litert/" not in p) + max(sum(size[p] for p in b) for b in builds)
    want = (sum(size.values()), sum(n for p, n in size.items() if p not in lazy) + largest)
    assert footprint(litert_site, site_files(litert_site)) == want and want[1] < want[0] / 2.5 and want[0] > 25e6
    packed = footprint(litert_site, site_files(litert_site), lambda p: len(gzip.compress(p.read_bytes())))[1]
    said = re.search(
        r"site ([\d.]+) MB; a first visit downloads at most ([\d.]+) MB, ([\d.]+) MB gzipped",
        (litert_site.parent / "demo-stdout.txt").read_text(),
    )
    assert said and (float(said[1]), float(said[2])) == (round(want[0] / 1e6, 1), round(want[1] / 1e6, 1))
    assert abs(float(said[3]) * 1e6 - packed) < 0.05 * packed and packed < 5e6  # serve skips tiny files: within 5 %


def test_without_litert_the_site_has_no_trace_of_it(saved_model_site):
    assert not set(site_files(saved_model_site)) & LITERT_EXTRA
    assert "litert" not in json.loads((saved_model_site / "demo-config.json").read_text())
    template = (vendor.web_demo_dir() / "index.html").read_text()
    assert (saved_model_site / "index.html").read_text() == template.replace("{{TITLE}}", "Digits &lt;demo&gt;")


def test_litert_needs_a_saved_model_or_a_tflite(tfjs_models, tmp_path):
    _assert_refused([str(tfjs_models["fp32"]), "--litert"], tmp_path / "site", "--litert", "SavedModel", "--tflite")
    _assert_refused(
        [str(tfjs_models["fp32"]), "--tflite", str(tfjs_models["fp32"] / "model.json")],
        tmp_path / "site",
        "only applies with --litert",
    )
    assert not (tmp_path / "site").exists()


def test_litert_refuses_a_variable_batch_tflite(digits_model, tfjs_models, tmp_path):
    tf = import_tf()
    tflite = tmp_path / "fp32.tflite"
    tflite.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(digits_model)).convert())
    _assert_refused(
        [str(tfjs_models["fp32"]), "--litert", "--tflite", str(tflite)], tmp_path / "site", "not fixed", "batch 1"
    )
    assert not (tmp_path / "site").exists()


def test_litert_accepts_a_fixed_batch_tflite(litert_site, tfjs_models, tmp_path):
    given = litert_site / "model/model-int8-b1.tflite"
    result = CliRunner().invoke(
        app, ["demo", str(tfjs_models["fp32"]), "-o", str(tmp_path / "s"), "--litert", "--tflite", str(given)]
    )
    assert result.exit_code == 0, result.output
    assert digest(tmp_path / "s/model/model-int8-b1.tflite") == digest(given)
    lrt = json.loads((tmp_path / "s/demo-config.json").read_text())["litert"]
    assert (lrt["label"], lrt["variants"]) == ("LiteRT.js (model-int8-b1.tflite)", [])  # the given file only
    assert not (tmp_path / "s/model/model-fp32-b1.tflite").exists()


def test_package_json_pins_litert_exactly():
    root = vendor.web_demo_dir()
    pins = vendor.pinned_litert_versions(root)
    assert set(pins) == {"@litertjs/core", "@litertjs/wasm-utils"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in pins.values()), pins
    lock = json.loads((root / "package-lock.json").read_text())
    for name, version in pins.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_a_model_tfjs_cannot_convert_names_a_litert_command_that_works_without_calibration(tmp_path):
    """Issue 35: the refusal named --litert, and --litert then stopped for want of --calibration. The command it
    names now runs as given: with no calibration data --litert builds the fp32 .tflite alone (LiteRT.js runs it),
    and that file computes what TensorFlow computes."""
    from ai_edge_litert.interpreter import Interpreter

    model = gelu_model(tmp_path / "gelu")
    (model / "calibration.npz").unlink()
    _assert_refused([str(model)], tmp_path / "site", "Erfc", f"`edgetool demo {model} --litert`")
    result = CliRunner().invoke(app, ["demo", str(model), "--litert", "-o", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    lrt = json.loads((tmp_path / "site" / "demo-config.json").read_text())["litert"]
    assert (lrt["label"], lrt["variants"]) == ("LiteRT.js fp32", []), lrt
    assert sorted(p.name for p in (tmp_path / "site" / "model").glob("*.tflite")) == ["model-fp32-b1.tflite"]
    x = np.random.default_rng(1).normal(size=(1, 8)).astype(np.float32)
    runner = Interpreter(model_path=str(tmp_path / "site" / "model" / "model-fp32-b1.tflite")).get_signature_runner()
    got = next(iter(runner(**{next(iter(runner.get_input_details())): x}).values()))
    import tensorflow as tf

    want = next(iter(tf.saved_model.load(str(model)).signatures["serving_default"](tf.constant(x)).values()))
    np.testing.assert_allclose(got, want.numpy(), atol=1e-5)


def test_litert_with_missing_calibration_file_is_refused(digits_model, tmp_path):
    missing = tmp_path / "nope.npz"
    _assert_refused(
        [str(digits_model), "--litert", "--calibration", str(missing)], tmp_path / "site", "nope.npz does not exist"
    )


def test_a_box_head_is_not_the_ranked_classes_head():
    """A detection model's boxes[N,4] (sorting before classes[N,10]) is shown as values; labels go to classes."""
    heads = output_ui(
        (Tensor("boxes", "boxes:0", "float32", (None, 4)), Tensor("classes", "classes:0", "float32", (None, 10)))
    )
    assert [(h["name"], h["kind"], h["classes"]) for h in heads] == [
        ("classes", "classes", 10),
        ("boxes", "values", None),
    ]
