"""Representative / eval datasets for edgetool: load from .npz, .npy, image folders, TFRecord or CSV; match
to a model's input signature; seeded sampling; validation that reports every problem at once.

Imported as ``edge_tool.calibration`` only (the repository's calibration/, which the wheel installs inside
edge_tool/); it imports nothing of the rest of edgetool (tests/test_import_graph.py). Light at import: the public
names below load their modules on first use (so ``edge_tool.calibration.errors``, which edge_tool's error family
builds on, costs no NumPy import), and TensorFlow is imported only when a TFRecord
file is read.

    specs = [InputSpec("pixels", "float32", (None, 8, 8, 1))]
    ds = load("calibration.npz", specs, LoadOptions(samples=200, seed=0))
    converter.representative_dataset = ds.representative_dataset()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if __name__ != "edge_tool.calibration":  # one module identity: never a second copy of every class under another name
    raise ImportError(
        f"calibration/ is the package edge_tool.calibration, not {__name__!r}: import it as "
        "`from edge_tool.calibration import load, InputSpec, LoadOptions` (docs/install.md)."
    )

# public name -> (module relative to this package, attribute)
_EXPORTS = {
    "SUPPORTED_FORMATS": (".readers", "SUPPORTED"),
    "CalibrationError": (".errors", "CalibrationError"),
    "CalibrationSummary": (".dataset", "CalibrationSummary"),
    "Dataset": (".dataset", "Dataset"),
    "ImageContract": (".contract", "ImageContract"),
    "InputSpec": (".spec", "InputSpec"),
    "InputStats": (".dataset", "InputStats"),
    "LoadOptions": (".types", "LoadOptions"),
    "Sampling": (".types", "Sampling"),
    "SourceStream": (".loader", "SourceStream"),
    "TensorSpec": (".spec", "TensorSpec"),
    "iter_source": (".loader", "iter_source"),
    "load": (".loader", "load"),
    "show_shape": (".spec", "show_shape"),
    "specs_from": (".spec", "specs_from"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the names above, for type checkers and IDEs
    from .contract import ImageContract  # noqa: F401
    from .dataset import CalibrationSummary, Dataset, InputStats  # noqa: F401
    from .errors import CalibrationError  # noqa: F401
    from .loader import SourceStream, iter_source, load  # noqa: F401
    from .readers import SUPPORTED as SUPPORTED_FORMATS  # noqa: F401
    from .spec import InputSpec, TensorSpec, show_shape, specs_from  # noqa: F401
    from .types import LoadOptions, Sampling  # noqa: F401


def __getattr__(name: str) -> Any:
    """Load a public name's module on first access (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
