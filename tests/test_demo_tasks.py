"""edgetool demo beyond classifiers: a model tensorflowjs cannot convert (refused naming the op and --litert, or a
LiteRT.js-only site with --litert), the task and final activation recorded for the page, waveform and video inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edge_tool.demo.tfjs_step import litert_blocker, tfjs_failure
from edge_tool.tfjs_writer.export import unsupported_ops_message
from tests import page_task_models as models
from tests.edgetool_runs import run_edgetool

# not in the quick tier: builds a model per task and a demo site per test (~4 min of the quick tier under load)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Model NAME built once per module (tests/page_task_models.py)."""
    cache = {}

    def _get(name: str):
        if name not in cache:
            cache[name] = models.build(name, tmp_path_factory.mktemp(name) / "model")
        return cache[name]

    return _get


def test_demo_of_a_model_tfjs_cannot_run_names_the_op_and_litert(built, tmp_path):
    site = tmp_path / "site"
    proc = run_edgetool("demo", built("gelu"), "-o", site)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = proc.stderr.strip()
    assert "Erfc" in message and "GELU" in message and "--litert" in message, message
    assert len(message.splitlines()) == 1, message  # one paragraph, no converter log
    assert not site.exists() and not list(tmp_path.iterdir())  # nothing half-written


def test_litert_site_without_tfjs_has_no_tfjs_in_it(built, tmp_path):
    site = tmp_path / "site"
    proc = run_edgetool("demo", built("gelu"), "-o", site, "--litert")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Erfc" in proc.stdout and "LiteRT.js alone" in proc.stdout
    config = json.loads((site / "demo-config.json").read_text())
    assert config["modelUrl"] is None and config["wasmPath"] is None and config["runtime"] == {}
    names = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert {"model/model-int8-b1.tflite", "model/model-fp32-b1.tflite", "engines/litert.js"} <= names
    assert not {n for n in names if n.startswith("vendor/tf") or "tfjs" in n or n == "model/model.json"}
    sw = (site / "sw.js").read_text()
    assert "tf.min.js" not in sw and "tf.min.js" not in (site / "index.html").read_text()
    assert "LiteRT.js" in json.loads((site / "manifest.webmanifest").read_text())["description"]


def test_task_and_final_activation_are_recorded_for_the_page(built, tmp_path):
    site = tmp_path / "site"
    proc = run_edgetool("demo", built("multilabel"), "-o", site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((site / "demo-config.json").read_text())
    assert config["task"]["name"] == "multilabel" and not config["task"]["assumed"]
    assert config["outputs"][0]["activation"] == "sigmoid"
    assert "task: multilabel" in proc.stdout
    again = tmp_path / "from-tfjs"  # a tfjs graph model: the activation is read off model.json's nodes
    proc = run_edgetool("demo", site / "model", "-o", again)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((again / "demo-config.json").read_text())
    assert config["task"]["name"] == "multilabel" and config["outputs"][0]["activation"] == "sigmoid"


def test_segmentation_is_inferred_and_task_can_be_given(built, tmp_path):
    proc = run_edgetool("demo", built("segmentation"), "-o", tmp_path / "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "a" / "demo-config.json").read_text())["task"]["name"] == "segmentation"
    proc = run_edgetool("demo", built("regression"), "-o", tmp_path / "b", "--task", "regression")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    task = json.loads((tmp_path / "b" / "demo-config.json").read_text())["task"]
    assert task == {"name": "regression", "reason": "--task", "assumed": False}


@pytest.mark.parametrize(
    "args, expected",
    [
        (("--task", "ranking"), "Invalid value for '--task'"),  # Typer's refusal, naming the registry's tasks
        (("--sample-rate", "12"), "--sample-rate must be"),
    ],
)
def test_bad_task_or_sample_rate_is_refused_before_anything_is_written(built, tmp_path, args, expected):
    proc = run_edgetool("demo", built("regression"), "-o", tmp_path / "site", *args)
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
    assert not (tmp_path / "site").exists()


def test_waveform_and_video_inputs_get_their_own_ui_not_a_form(built, tmp_path):
    proc = run_edgetool("demo", built("audio"), "-o", tmp_path / "a", "--sample-rate", "8000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((tmp_path / "a" / "demo-config.json").read_text())
    assert config["inputs"][0]["kind"] == "audio" and config["sampleRate"] == 8000
    proc = run_edgetool("demo", built("video"), "-o", tmp_path / "v")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # 768 values per sample: a note, not a refusal or form
    assert json.loads((tmp_path / "v" / "demo-config.json").read_text())["inputs"][0]["kind"] == "video"


def test_refusal_names_what_works_when_litert_cannot_take_the_model_either():
    log = "tensorflowjs could not convert vit: Unsupported Ops in the model before optimization\nErfc\n(log)"
    open_hw = [{"name": "pixels", "resized": True}]
    message = tfjs_failure("vit", log, False, litert_blocker(open_hw))
    assert "Erfc" in message and "its input pixels has an open height/width" in message
    assert "edgetool convert vit" in message and "`edgetool demo vit --litert`" not in message
    assert litert_blocker([{"name": "ids"}, {"name": "mask"}]) is None  # several fixed inputs: LiteRT.js runs them
    plain = tfjs_failure("vit", log, False)
    assert "`edgetool demo vit --litert`" in plain and "\n" not in plain


def test_refusal_reads_the_ops_from_converts_rewritten_tfjs_refusal():
    # export_tfjs raises convert's own wording: the demo's refusal must still name the op
    said = unsupported_ops_message(["Erfc"])
    message = tfjs_failure("bert", said, False, litert_blocker([{"name": "input_ids"}, {"name": "attention_mask"}]))
    assert "no kernel for the op Erfc (what the exact GELU" in message
    assert "`edgetool demo bert --litert`" in message and "nor does --litert help" not in message


def test_the_demo_refusal_reads_the_op_from_converts_refusal_too():
    """convert's tfjs step words the refusal itself now; the demo's paragraph still names the op and where it comes
    from, once (it repeated convert's whole sentence after its own 'cannot convert')."""
    message = tfjs_failure(Path("m.keras"), unsupported_ops_message(["Erfc"]), False)
    assert "no kernel for the op Erfc (what the exact GELU" in message and message.count("no kernel") == 1
    assert "`edgetool demo m.keras --litert`" in message


def test_two_int64_input_model_tfjs_cannot_run_is_pointed_to_litert_which_builds(built, tmp_path):
    # BERT-like: int64 input_ids + attention_mask, exact GELU. The refusal's way out is --litert, and it works: the
    # .tflite takes the ids as int32 (LiteRT.js 2.5.3 holds no int64 tensor) and casts them inside.
    model = built("bert")
    proc = run_edgetool("demo", model, "-o", tmp_path / "refused")
    assert proc.returncode == 2 and not (tmp_path / "refused").exists(), proc.stdout + proc.stderr
    assert "Erfc" in proc.stderr and f"edgetool demo {model} --litert" in proc.stderr, proc.stderr
    proc = run_edgetool("demo", model, "-o", tmp_path / "site", "--litert")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((tmp_path / "site" / "demo-config.json").read_text())
    assert [(i["name"], i["kind"], i["integer"]) for i in config["inputs"]] == [
        ("attention_mask", "flat", True),
        ("input_ids", "flat", True),
    ]
    assert {i["feed"]: i["dtype"] for i in config["litert"]["inputs"]} == {
        "input_ids": "int32",
        "attention_mask": "int32",
    }


def test_litert_refuses_a_given_tflite_with_int64_inputs_naming_the_dtype(built, tmp_path):
    import tensorflow as tf  # heavy: only this test converts by hand

    model = built("bert")
    fixed = tf.lite.TFLiteConverter.from_saved_model(str(model)).convert()  # raw converter: keeps int64 inputs
    (tmp_path / "raw.tflite").write_bytes(fixed)
    proc = run_edgetool("demo", model, "-o", tmp_path / "site", "--litert", "--tflite", tmp_path / "raw.tflite")
    assert proc.returncode == 2 and not (tmp_path / "site").exists(), proc.stdout + proc.stderr
    assert "dtype is int64" in proc.stderr and "int64 ids are fed as int32" in proc.stderr, proc.stderr
