"""Every TFLite conversion runs through ``edge_tool.tflite_converter.run``: one converter factory, one runner holding the
WHILE-loop guard, the warning filter and the translation of the converter's failures — blamed by exception type.

The CLI cases use real models the converter refuses (an op the builtin set lacks; a tf.while_loop whose calibration
kills TensorFlow 2.19 with SIGSEGV — before the one runner, ``eval --per-layer``, ``demo --litert`` and check's
LiteRT.js artefact crashed on it, so those cases run in a child process)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.convert.modes import int8
from edge_tool.errors import ConversionError
from edge_tool.tflite_converter.run import CallbackFailed, Refusal, new_converter, ops_needing_select, run_converter
from tests.edgetool_runs import run_edgetool

REPO = Path(__file__).resolve().parents[1]
CONVERTER_PACKAGE = REPO / "edge_tool" / "tflite_converter"
# Names that make or run a converter (or its private quantizer) anywhere but in edge_tool/tflite_converter/
CONVERTER_NAMES = {
    "TFLiteConverter",
    "TFLiteConverterV2",
    "TFLiteSavedModelConverterV2",
    "TFLiteKerasModelConverterV2",
    "from_saved_model",
    "from_keras_model",
    "from_concrete_functions",
    "Calibrator",
    "mlir_quantize",
    "_mlir_quantize",
}
DEBUGGER_NAMES = {"QuantizationDebugger", "get_nondebug_quantized_model"}  # they convert: inside run_converter
SITES = {"context.py", "selective.py", "export.py", "fixed_int8.py"}  # modules outside tflite_converter/ that convert


def _offences(tree: ast.AST) -> set[str]:
    """Converter names used, zero-argument ``.convert()`` calls, and catch-all handlers in ``tree``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in CONVERTER_NAMES | DEBUGGER_NAMES:
            if node.attr.startswith("from_") and "Converter" not in ast.unparse(node.value):
                continue  # another library's loader (tf2onnx's tf_loader.from_saved_model), not a TFLite converter
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in CONVERTER_NAMES:
            found.add(node.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "convert"
            and not node.args
            and not node.keywords
        ):
            found.add(".convert()")
        elif isinstance(node, ast.ExceptHandler) and (
            node.type is None or (isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"))
        ):
            found.add("catch-all except")
    return found


def _calls(tree: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == name for n in ast.walk(tree)
    )


def test_every_conversion_goes_through_run_converter():
    """Outside edge_tool/tflite_converter/ no module makes a converter, calls ``.convert()`` or the quantizer; the modules
    running the QuantizationDebugger (which converts) do it through run_converter; no module that converts has a
    catch-all ``except``."""
    converting, bad = set(), {}
    for path in sorted((REPO / "edge_tool").rglob("*.py")):
        if CONVERTER_PACKAGE in path.parents:
            continue
        tree = ast.parse(path.read_text())
        runs = _calls(tree, "run_converter") or _calls(tree, "new_converter")
        offences = _offences(tree) - (DEBUGGER_NAMES if _calls(tree, "run_converter") else set())
        offences -= {"catch-all except"} if not runs else set()
        if offences:
            bad[str(path.relative_to(REPO))] = sorted(offences)
        if _calls(tree, "run_converter"):
            converting.add(path.name)
    assert bad == {}
    assert SITES <= converting


def test_the_architecture_check_can_fail():
    tree = ast.parse(
        "def f(tf, p):\n    c = tf.lite.TFLiteConverter.from_saved_model(p)\n    try:\n"
        "        return c.convert()\n    except Exception:\n        pass\n"
    )
    assert _offences(tree) == {"TFLiteConverter", "from_saved_model", ".convert()", "catch-all except"}
    assert _offences(ast.parse("img.convert('RGB')")) == set()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Tiny SavedModels x[None, 4] -> y: ``flex`` (tf.math.cumprod: no TFLite builtin), ``loop`` (a tf.while_loop
    whose trip count depends on the input: a builtin WHILE), ``plain`` (matmul + tanh); calibration.npz beside each."""
    import tensorflow as tf

    root = tmp_path_factory.mktemp("converter_run")
    w = np.full((4, 4), 0.1, np.float32)

    def flex(x):
        return {"y": tf.math.cumprod(x, axis=1)}

    def loop(x):
        n = tf.cast(tf.reduce_sum(tf.ones_like(x[0, :1])), tf.int32) + 2
        _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.tanh(tf.matmul(y, w) + x)), (0, x))
        return {"y": y}

    def plain(x):
        return {"y": tf.tanh(tf.matmul(x, w) + x)}

    out = {}
    for fn in (flex, loop, plain):
        module = tf.Module()
        module.serve = tf.function(fn, input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        out[fn.__name__] = root / fn.__name__
        tf.saved_model.save(module, str(out[fn.__name__]), signatures={"serving_default": module.serve})
        np.savez(out[fn.__name__] / "calibration.npz", x=np.random.RandomState(0).rand(16, 4).astype(np.float32))
    return out


def _int8(tf, conv, data):
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = data
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]


def _samples():
    for x in np.random.RandomState(1).rand(4, 1, 4).astype(np.float32):
        yield [x]


def test_a_converter_error_names_the_ops_from_its_error_data(models):
    """ConverterError → the model: its ERROR_NEEDS_FLEX_OPS entries name the op and --allow-select-tf-ops; with
    the flag the same converter set-up converts (run_converter adds the TF Select set)."""
    from tensorflow.lite.python.convert_phase import ConverterError

    refusal = Refusal("flex.savedmodel", "The TFLite converter failed on flex.savedmodel")
    with pytest.raises(ConversionError) as refused:
        run_converter(new_converter(models["flex"]), refusal)
    message = str(refused.value)
    assert "flex.savedmodel uses ops the TFLite builtin op set cannot express: Cumprod." in message
    assert "--allow-select-tf-ops" in message and "loc(" not in message
    assert run_converter(new_converter(models["flex"], allow_select_tf_ops=True), refusal)[4:8] == b"TFL3"
    assert ops_needing_select(ConverterError("TF Select ops: Erf")) == []  # the error data decides, not the text


def test_blame_follows_the_exception_type(models):
    """The converter's own ValueError (its calibrator refusing a sample) blames the model; a TypeError, or any
    exception of edgetool's own callback, is a bug and is not disguised as a ConversionError."""
    import tensorflow as tf

    refusal = Refusal("plain", "The TFLite converter failed on plain")

    def wrong_shape():
        yield [np.zeros((1, 5), np.float32)]

    conv = new_converter(models["plain"])
    _int8(tf, conv, wrong_shape)
    with pytest.raises(ConversionError, match="The TFLite converter failed on plain"):
        run_converter(conv, refusal)

    def buggy():
        yield [np.zeros((1, 4), np.float32)]
        raise ValueError("an edgetool bug in its own generator")

    conv = new_converter(models["plain"])
    _int8(tf, conv, buggy)
    with pytest.raises(CallbackFailed) as bug:
        run_converter(conv, refusal)
    assert isinstance(bug.value.__cause__, ValueError) and not isinstance(bug.value, ValueError)

    def typo(converter):
        return converter.convert(extra=1)  # a changed API: TypeError at edgetool's call site

    with pytest.raises(TypeError):
        run_converter(new_converter(models["plain"]), refusal, typo)
    with pytest.raises(TypeError, match="made by new_converter"):
        run_converter(tf.lite.TFLiteConverter.from_saved_model(str(models["plain"])), refusal)


def test_a_bug_inside_a_conversion_is_an_internal_error_not_the_models(models, tmp_path, monkeypatch):
    """An exception edgetool's own code raises inside the converter surfaces as exit 70, not as a refusal (2)."""

    def broken(tf, conv, data, io_dtype=None, **kw):
        def gen():
            raise ValueError("bug")
            yield

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = gen

    monkeypatch.setattr(int8, "configure_full_int8", broken)
    monkeypatch.setenv("EDGETOOL_DEBUG", "0")  # the one-line report users get, not the traceback tests get
    result = CliRunner().invoke(app, ["convert", str(models["plain"]), "--quant", "int8", "-o", str(tmp_path / "o")])
    assert result.exit_code == 70, result.output
    assert "internal error" in result.output and "CallbackFailed" in result.output
    assert not (tmp_path / "o").exists()


def _refused(proc, *needles: str) -> str:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text[-3000:]
    assert "Traceback" not in text and "internal error" not in text and "loc(" not in text, text[-3000:]
    for needle in needles:
        assert needle in text, text[-3000:]
    return text


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_eval_per_layer_refusals_go_through_the_same_translation(models, tmp_path):
    """--per-layer rebuilds an int8 model of the reference: an op without builtin is named, a WHILE loop is
    refused before the calibrator crashes (it segfaulted there before)."""
    artefact = tmp_path / "plain"
    assert run_edgetool("convert", models["plain"], "--quant", "int8", "-o", artefact).returncode == 0
    tflite = next(artefact.glob("*.tflite"))
    data = models["plain"] / "calibration.npz"
    ok = run_edgetool("eval", tflite, "-r", models["plain"], "-d", data, "--per-layer")
    assert ok.returncode == 0 and "worst quantized layers" in ok.stdout, ok.stdout + ok.stderr
    _refused(
        run_edgetool("eval", tflite, "-r", models["flex"], "-d", data, "--per-layer"),
        "uses ops the TFLite builtin op set cannot express: Cumprod",
        "without --per-layer",
    )
    _refused(
        run_edgetool("eval", tflite, "-r", models["loop"], "-d", data, "--per-layer"),
        "WHILE loop",
        "crashes TensorFlow",
        "without --per-layer",
    )


@pytest.mark.slow  # not in the quick tier (its measured cost)
def test_demo_litert_and_check_refusals_go_through_the_same_translation(models, tmp_path):
    """demo --litert (an internal error on a Flex op and a segfault on a WHILE loop before) and check's LiteRT.js
    artefact, which is the same build, refuse with the runner's words."""
    _refused(
        run_edgetool("demo", models["flex"], "--litert", "-o", tmp_path / "flex"),
        "uses ops the TFLite builtin op set cannot express: Cumprod",
        "LiteRT.js runs builtin ops only",
    )
    assert not (tmp_path / "flex").exists()
    _refused(run_edgetool("demo", models["loop"], "--litert", "-o", tmp_path / "loop"), "WHILE loop", "--tflite")
    check = run_edgetool("check", models["loop"], "--target", "litertjs")
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stdout + check.stderr
    assert "litertjs    fails" in check.stdout and "WHILE loop" in check.stdout, check.stdout
