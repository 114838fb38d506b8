"""convert checks every fp32/fp16 .tflite against the SavedModel on seeded random inputs (edge_tool/convert/fidelity)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from edge_tool.calibration.spec import TensorSpec
from edge_tool.convert import fidelity
from edge_tool.models import probes
from edge_tool.models.signatures import SignatureInfo
from tests.edgetool_runs import REPO, edgetool_in_process
from tests.schema_check import validated


def _sig(*inputs: TensorSpec) -> SignatureInfo:
    return SignatureInfo("serving_default", inputs, (TensorSpec("probs", "float32", (None, 10)),))


def test_probe_feeds_are_seeded_and_shaped_by_the_signature():
    info = _sig(
        TensorSpec("image", "uint8", (None, 8, 8, 1)),
        TensorSpec("ids", "int32", (3, 5)),
        TensorSpec("x", "float32", (None, 4)),
    )
    feeds = probes.probe_feeds(info)
    assert len(feeds) == probes.PROBES
    assert feeds[0]["image"].shape == (1, 8, 8, 1) and feeds[0]["image"].dtype == np.uint8
    assert feeds[0]["ids"].shape == (3, 5) and not feeds[0]["ids"].any()  # ids 0: valid for any embedding
    assert feeds[0]["x"].dtype == np.float32 and 0 <= feeds[0]["x"].min() and feeds[0]["x"].max() < 1
    again = probes.probe_feeds(info)
    assert all(np.array_equal(a["x"], b["x"]) for a, b in zip(feeds, again))
    assert not np.array_equal(feeds[0]["x"], feeds[1]["x"])


@pytest.mark.parametrize(
    "spec",
    [TensorSpec("x", "float32", (None, None, 8)), TensorSpec("x", "string", (None,)), TensorSpec("x", "float32", None)],
)
def test_no_probe_for_unknown_shapes_or_strings(spec):
    assert probes.probe_feeds(_sig(spec)) is None


def test_compare_scales_the_tolerance_and_flags_drift_and_nan():
    want = [{"probs": np.array([[0.2, 0.8]], np.float32), "extra": np.ones((1, 2))}]
    near = [{"probs": np.array([[0.2005, 0.7995]], np.float32)}]
    check = fidelity.compare("fp32", want, near)
    assert check.ok and check.max_abs_error == pytest.approx(5e-4, rel=1e-2) and check.tolerance == 1e-3
    assert not fidelity.compare("fp32", want, [{"probs": np.array([[0.3, 0.7]], np.float32)}]).ok
    assert fidelity.compare("fp16", want, [{"probs": np.array([[0.23, 0.77]], np.float32)}]).ok  # fp16: 5e-2
    logits = [{"probs": np.array([[200.0, -50.0]])}]
    assert fidelity.compare("fp32", logits, [{"probs": np.array([[200.1, -50.0]])}]).ok  # 0.1 of a 200 scale
    bad = fidelity.compare("fp32", want, [{"probs": np.array([[np.nan, 0.8]], np.float32)}])
    assert not bad.ok and bad.to_dict()["max_abs_error"] is None and "NaN/Inf" in bad.warning("m.tflite", "fp32")
    assert fidelity.compare("fp32", want, [{"other": np.zeros((1, 2))}]) is None  # nothing matched by name
    assert fidelity.compare("fp32", want, [{"probs": np.zeros((2, 2))}]) is None  # nor by shape
    ids = [{"label": np.array([3], np.int64)}]
    assert fidelity.compare("fp32", ids, [{"label": np.array([4], np.int64)}]) is None  # argmax outputs: not compared


@pytest.mark.slow
def test_convert_records_the_self_check_of_float_modes(digits_model, tmp_path):
    out = tmp_path / "o"
    proc = edgetool_in_process("convert", digits_model, "--quant", "fp32,fp16,dynamic", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    arts = {a["quant"]: a for a in validated(out / "manifest.json", "manifest")["artifacts"]}
    assert arts["fp32"]["self_check"]["ok"] and arts["fp32"]["self_check"]["max_abs_error"] < 1e-5
    assert arts["fp32"]["self_check"]["samples"] == probes.PROBES
    assert arts["fp16"]["self_check"]["ok"] and arts["fp16"]["self_check"]["max_abs_error"] < 1e-2
    assert "self_check" not in arts["dynamic"]  # quantized: measured by eval on real data instead
    assert "edgetool eval measures it" in arts["dynamic"]["self_check_skipped"]
    assert "does not compute" not in proc.stderr


_WRONG_REFERENCE = """
import sys
import numpy as np
from edge_tool.convert.context import BuildContext
real = BuildContext.reference_outputs
def shifted(self, feeds):  # as if the .tflite had drifted by 0.02 from the SavedModel
    return [{k: v + 0.02 for k, v in out.items()} for out in real(self, feeds)]
BuildContext.reference_outputs = shifted
from edge_tool.cli import main
sys.argv = ["edgetool", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_a_float_file_that_drifts_from_the_savedmodel_is_written_but_the_run_exits_1(digits_model, tmp_path):
    out = tmp_path / "o"
    proc = subprocess.run(
        [sys.executable, "-c", _WRONG_REFERENCE, "convert", str(digits_model), "--quant", "fp32,fp16", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # written, but a wrong file never reads as success
    text = " ".join(proc.stderr.split())
    assert "model_fp32.tflite does not compute what the SavedModel computes: max abs error 0.02" in text
    assert "self-check failed" in text and "model_fp32.tflite does not compute what the SavedModel computes on" in text
    assert "model_fp16" not in text.split("self-check failed")[1]  # only the file that failed is named
    assert (out / "model_fp32.tflite").is_file() and (out / "model_fp16.tflite").is_file()
    arts = {a["quant"]: a for a in validated(out / "manifest.json", "manifest")["artifacts"]}
    assert not arts["fp32"]["self_check"]["ok"] and arts["fp32"]["self_check"]["max_abs_error"] > 0.019
    assert arts["fp16"]["self_check"]["ok"]  # 0.02 is within fp16's 5e-2 of a scale-1 output


_ASSERTING_MODEL = """
import sys, tensorflow as tf
class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def serve(self, x):  # refuses inputs below 5: the random probes in [0, 1) make TensorFlow raise
        tf.debugging.assert_greater_equal(x, 5.0)
        return {"y": x * 2.0}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
"""


@pytest.mark.slow
def test_a_savedmodel_that_refuses_the_random_probes_is_converted_unchecked(tmp_path):
    model, out = tmp_path / "m", tmp_path / "o"
    subprocess.run(
        [sys.executable, "-c", _ASSERTING_MODEL, str(model)], check=True, cwd=REPO, timeout=300, capture_output=True
    )
    proc = edgetool_in_process("convert", model, "--quant", "fp32", "-o", out)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    entry = validated(out / "manifest.json", "manifest")["artifacts"][0]
    assert "self_check" not in entry and "refused the seeded random inputs" in entry["self_check_skipped"]
    assert "was not self-checked: the SavedModel refused" in " ".join((proc.stdout + proc.stderr).split())


_FLEX_MODEL = """
import sys, tensorflow as tf
class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="x")])
    def serve(self, x):  # a fixed projective transform: ImageProjectiveTransformV3 has a Flex kernel only
        t = tf.repeat(tf.constant([[0.9, 0.1, 0.5, -0.1, 0.9, 0.3, 0.0, 0.0]]), tf.shape(x)[0], axis=0)
        y = tf.raw_ops.ImageProjectiveTransformV3(images=x, transforms=t, output_shape=[8, 8], fill_value=0.0,
                                                  interpolation="BILINEAR", fill_mode="REFLECT")
        return {"y": tf.reduce_mean(y, axis=[1, 2]) * 3.0}
m = M()
tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})
"""


@pytest.mark.slow
def test_a_flex_file_is_self_checked_through_the_flex_delegate(tmp_path):
    model, out = tmp_path / "m", tmp_path / "o"
    subprocess.run(
        [sys.executable, "-c", _FLEX_MODEL, str(model)], check=True, cwd=REPO, timeout=300, capture_output=True
    )
    proc = edgetool_in_process("convert", model, "--allow-select-tf-ops", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = validated(out / "manifest.json", "manifest")["artifacts"][0]
    assert entry["tensors"]["flex_ops"] == ["ImageProjectiveTransformV3"]
    assert entry["self_check"]["ok"] and entry["self_check"]["max_abs_error"] < 1e-5, entry


_INT16X8_FAILS = """
import sys, dataclasses
from edge_tool.convert.modes import MODES
from edge_tool.convert.config import QuantMode
from edge_tool.errors import ConversionError
def refuse(ctx):  # what a model LiteRT cannot run in 16x8 gets (MobileNetV2: DEPTHWISE_CONV_2D overflow check)
    raise ConversionError("--quant int16x8: the TFLite converter wrote a model that LiteRT cannot run (test).")
MODES[QuantMode.INT16X8] = dataclasses.replace(MODES[QuantMode.INT16X8], build=refuse)
from edge_tool.cli import main
sys.argv = ["edgetool", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("asked", [["--format", "all"], ["--quant", "fp32,int16x8"]], ids=["format-all", "explicit"])
def test_format_all_writes_every_mode_that_builds_and_records_the_rest(digits_model, tmp_path, asked):
    """--format all means every mode that works: one the libraries cannot build is recorded, the rest written (exit
    0); in a list named with --quant the rest is written too, and the run exits 1 (not every requested mode built)."""
    out = tmp_path / "o"
    proc = subprocess.run(
        [sys.executable, "-c", _INT16X8_FAILS, "convert", str(digits_model), *asked, "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    manifest = validated(out / "manifest.json", "manifest")
    assert "cannot run (test)" in manifest["failed"]["int16x8"]
    written = {a["quant"] for a in manifest["artifacts"] if a["format"] == "tflite"}
    if asked[0] == "--quant":
        assert proc.returncode == 1 and "not every mode built" in proc.stderr, proc.stdout + proc.stderr
        assert written == {"fp32"} and (out / "model_fp32.tflite").is_file() and not (out / "tfjs").exists()
    else:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert written == {"fp32", "fp16", "dynamic", "int8"} and (out / "tfjs" / "model.json").is_file()
    assert not (out / "model_int16x8.tflite").exists() and "not built: int16x8" in proc.stdout
