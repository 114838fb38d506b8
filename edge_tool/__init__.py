"""edgetool: train with tf.distribute, convert to TFLite/TFJS, evaluate drift and latency, ship a PWA demo.

The Python API (``edge_tool.api``; TensorFlow is imported only when a function runs)::

    from edge_tool import convert, evaluate
    result = convert("models/digits", "out", quant=["fp32", "int8"], format="all")
    report = evaluate([result.tflite("int8")], "models/digits", "models/digits/eval.npz")
"""

__version__ = "0.1.0"

import sys
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

# The repository's calibration/ and web_demo/ are the subpackages edge_tool.calibration and edge_tool.web_demo
# (pyproject's package-dir; the wheel holds them inside edge_tool/).
_BESIDE = ("calibration", "web_demo")


class _CheckoutFinder:
    """Finds ``edge_tool.calibration`` and ``edge_tool.web_demo`` in the checkout this ``edge_tool`` was imported
    from (its parent directory), before any other finder: an editable install of another checkout, or none at all
    (``python -m edge_tool`` at the repository root), can never give this edge_tool another checkout's files."""

    def __init__(self, root: Path):
        self.root = str(root)

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:
        """The spec of ``edge_tool.<name>`` for the folders beside edge_tool/; None for every other module."""
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in _BESIDE:
            return None
        return PathFinder.find_spec(fullname, [self.root])


def _find_beside_in_a_checkout() -> None:
    here = Path(__file__).resolve().parent
    # a source checkout or unpacked sdist (build_support/ beside edge_tool/), not an installed wheel
    if not (here / "calibration").is_dir() and (here.parent / "build_support" / "edgetool_build.py").is_file():
        sys.meta_path.insert(0, _CheckoutFinder(here.parent))


_find_beside_in_a_checkout()

from edge_tool.api import convert, demo, evaluate, inspect, read_metadata, train  # noqa: E402

__all__ = ["__version__", "convert", "demo", "evaluate", "inspect", "read_metadata", "train"]
