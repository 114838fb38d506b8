"""Representative / eval datasets for edgetool: load from .npz, .npy, image folders, TFRecord or CSV; match
to a model's input signature; seeded sampling; validation that reports every problem at once.

Light at import: TensorFlow is imported only when a TFRecord file is read.

    specs = [InputSpec("pixels", "float32", (None, 8, 8, 1))]
    ds = load("calibration.npz", specs, LoadOptions(samples=200, seed=0))
    converter.representative_dataset = ds.representative_dataset()
"""

from calibration.dataset import CalibrationSummary, Dataset, InputStats
from calibration.loader import SourceStream, iter_source, load
from calibration.readers import SUPPORTED as SUPPORTED_FORMATS
from calibration.types import CalibrationError, InputSpec, LoadOptions, Sampling, show_shape, specs_from

__all__ = [
    "SUPPORTED_FORMATS", "CalibrationError", "CalibrationSummary", "Dataset", "InputSpec", "InputStats",
    "LoadOptions", "Sampling", "SourceStream", "iter_source", "load", "show_shape", "specs_from",
]
