"""Run every .tflite convert writes once, in a child process: a file that kills LiteRT is refused, not shipped.

TensorFlow's converter (seen on 2.19) can write a model LiteRT aborts on (e.g. int16x8 of a Transformer block: SIGABRT in
the kernel's prepare, the raw converter's file too; int16x8 of an LSTM: "output_state != nullptr" in prepare). The
child loads the file with the serving signature and runs one all-zeros input. A death by signal or a hang refuses
the mode, and so does an exception when every input shape is fixed; with a dynamic dimension (set to 1 here) the
exception may come from that size, so it is not held against the file. String outputs travel as bytes arrays
(``S`` dtype): numpy never loads a pickled array here. Given probe inputs (an .npz per sample),
the child also runs each of them (variable tensors reset before each; with ``stream``, for a file with resource-variable
state, all of them in order in a fresh interpreter) and returns the outputs, for ``convert.fidelity``.
A file with Flex (TF Select) ops runs in TensorFlow's own ``tf.lite.Interpreter``, which links the Flex delegate
(ai_edge_litert's does not): such files are run-checked and self-checked like any other.
Given a sample (one calibration sample, for a model with an open non-batch dimension such as H×W), the child runs
it instead of the zeros: at a real shape, an exception is held against the file too.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path

from edge_tool.core.childproc import python_command
from edge_tool.errors import ConversionError
from edge_tool.litert.isolated import death_reason, last_message

TIMEOUT_S = 300
_CHILD = r"""
import sys
import numpy as np

args = sys.argv[1:]
if args[0] == "--flex":  # TensorFlow's own interpreter: it links the Flex delegate, which plain LiteRT lacks
    args = args[1:]
    import warnings
    warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated")
    from tensorflow.lite.python.interpreter import Interpreter
else:
    from ai_edge_litert.interpreter import Interpreter
stream = args[1:2] == ["--stream"]  # the probes are one stream of calls: a fresh interpreter, no reset between
args = [args[0], *args[2:]] if stream else args
sample = None
if len(args) > 2 and args[1] == "--sample":
    with np.load(args[2]) as z:
        sample = {k: z[k] for k in z.files}
    args = [args[0], *args[3:]]
it = Interpreter(model_path=args[0], num_threads=1)
signatures = it.get_signature_list()
if not signatures:
    it.allocate_tensors()
    it.invoke()
    sys.exit(0)
runner = it.get_signature_runner(next(iter(signatures)))
feed, dynamic = {}, False
for name, d in runner.get_input_details().items():
    dims = d.get("shape_signature")
    dims = d["shape"] if dims is None or len(dims) == 0 else dims
    dynamic = dynamic or any(int(n) < 0 for n in list(dims)[1:])
    feed[name] = np.zeros([max(1, int(n)) for n in dims], d["dtype"])
if sample is not None and set(sample) == set(feed):
    feed, dynamic = {k: v.astype(feed[k].dtype) for k, v in sample.items()}, False
try:
    runner(**feed)
except Exception as exc:
    text = str(exc).strip()
    print(text.splitlines()[-1] if text else type(exc).__name__, file=sys.stderr)
    # a custom op this plain LiteRT does not have (the app registers it) says nothing about the file
    sys.exit(4 if dynamic or "custom op" in text.lower() else 3)
outputs = {}
if stream:
    it = Interpreter(model_path=args[0], num_threads=1)
    runner = it.get_signature_runner(next(iter(signatures)))
for i, probe in enumerate(args[1:-1]):
    with np.load(probe) as z:
        if not stream:
            it.reset_all_variables()
        got = runner(**{k: z[k] for k in z.files})
    # string outputs (a label lookup) come back as object arrays of bytes: stored as bytes ('S'), never pickled
    outputs.update({f"{i}/{k}": np.asarray(v).astype(bytes) if np.asarray(v).dtype == object else np.asarray(v)
                    for k, v in got.items()})
if len(args) > 1:
    np.savez(args[-1], **outputs)
"""


class LiteRTRefused(ConversionError):
    """LiteRT raised (did not crash) on the written file: a kernel's prepare or invoke check failed."""


REFUSES = "LiteRT refuses it: "
_FIXED_SHAPE_FAILURE = 3  # LiteRT raised on a model whose input shapes are all fixed: the file itself is broken


def refuse_if_it_kills_litert(
    data: bytes, mode: str, probes: list[dict] | None = None, sample: dict | None = None, stream: bool = False
) -> list[dict] | None:
    """ConversionError when one zero-input run of ``data`` (``sample`` instead, when given) kills, hangs or (fixed
    shapes, or at the sample's shape) fails LiteRT; returns the outputs (``{name: array}`` per probe) when
    ``probes`` were given and ran, else None."""
    why, outputs = run_in_litert(data, probes, sample, stream)
    if why is not None:
        error = LiteRTRefused if why.startswith(REFUSES) else ConversionError
        if sample is not None:
            shapes = ", ".join("×".join(map(str, v.shape)) for v in sample.values())
            why += f"; run at the shape of the calibration data, {shapes}"
        raise error(
            f"--quant {mode}: the TFLite converter wrote a model that LiteRT cannot run ({why}). That is a "
            f"tflite_converter/kernel bug of TensorFlow {_tf_version()} for this model in this mode, so edgetool does not ship "
            "it. Use "
            "another --quant mode; --quant auto builds them all and keeps those that run."
        )
    return outputs


def open_shape_sample(signature, representative_dataset) -> dict | None:
    """The first calibration sample ``{input name: array}`` when an input has an open non-batch dimension (H×W,
    sequence length) and calibration data was loaded, else None: the run-check then runs at a real shape."""
    open_dims = any(t.shape is None or any(d is None for d in t.shape[1:]) for t in signature.inputs)
    if not open_dims or representative_dataset is None:
        return None
    return next(iter(representative_dataset()), None)


def litert_problem(data: bytes) -> str | None:
    """Why LiteRT cannot run ``data`` (one zero-input inference in a child process), or None when it can."""
    return run_in_litert(data)[0]


def run_in_litert(
    data: bytes, probes: list[dict] | None = None, sample: dict | None = None, stream: bool = False
) -> tuple[str | None, list[dict] | None]:
    """``(why LiteRT cannot run data, or None; the outputs of each probe feed, or None)`` from one child process
    (which runs ``sample``, when given, instead of all-zeros inputs)."""
    import numpy as np  # noqa: PLC0415

    # numpy-backed, and this module is on --help's import path (the mode registry): imported when a file is run
    from edge_tool.parsers.tflite_model import summarize_tflite  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="edgetool-smoke-") as tmp:
        path = Path(tmp) / "model.tflite"
        path.write_bytes(data)
        args = ["--flex"] if summarize_tflite(data).flex_ops else []
        args += [str(path), *(["--stream"] if stream and probes else [])]
        if sample is not None:
            np.savez(Path(tmp) / "sample.npz", **sample)
            args += ["--sample", str(Path(tmp) / "sample.npz")]
        for i, feed in enumerate(probes or ()):
            np.savez(Path(tmp) / f"probe{i}.npz", **feed)
            args.append(str(Path(tmp) / f"probe{i}.npz"))
        result = Path(tmp) / "outputs.npz"
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        try:
            proc = subprocess.run(
                python_command("-c", _CHILD, *args, *([str(result)] if probes else [])),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return f"one inference did not finish within {TIMEOUT_S} s", None
        if proc.returncode < 0:
            return death_reason(proc.returncode, proc.stderr, "LiteRT"), None
        if proc.returncode == _FIXED_SHAPE_FAILURE:
            return f"{REFUSES}{last_message(proc.stderr)}", None
        if proc.returncode != 0 or not result.is_file():
            return None, None  # ran (or failed for a reason not held against the file): no outputs to compare
        with np.load(result) as z:
            flat = {k: z[k] for k in z.files}
    return None, [{k.split("/", 1)[1]: v for k, v in flat.items() if k.startswith(f"{i}/")} for i in range(len(probes))]


def _tf_version() -> str:
    """The installed TensorFlow's version, from its metadata (no import)."""
    try:
        return metadata.version("tensorflow")
    except metadata.PackageNotFoundError:
        return "(version unknown)"
