"""edgetool: train with tf.distribute, convert to TFLite/TFJS, evaluate drift and latency, ship a PWA demo.

The Python API (``edge_tool.api``; TensorFlow is imported only when a function runs)::

    from edge_tool import convert, evaluate
    result = convert("models/digits", "out", quant=["fp32", "int8"], format="all")
    report = evaluate([result.tflite("int8")], "models/digits", "models/digits/eval.npz")

The repository's calibration/ and web_demo/ are the subpackages ``edge_tool.calibration`` and ``edge_tool.web_demo``
of an installed edgetool only (pyproject's package-dir: the wheel holds them inside edge_tool/, an editable install
maps them through setuptools' finder); docs/install.md.
"""

__version__ = "0.1.0"

from edge_tool.api import convert, demo, evaluate, inspect, read_metadata, train

__all__ = ["__version__", "convert", "demo", "evaluate", "inspect", "read_metadata", "train"]
