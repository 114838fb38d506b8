"""Calibration data for ``check``'s int8 builds when the user gave none: synthetic, and said so.

The targets that run only full-integer models (``TargetSpec.needs_calibration``) need an int8 .tflite, and an int8 build
needs representative data. Which ops the converter emits, their types and the tensor arena do not depend on the
calibration values (they set the scales), so op support is checked on a build calibrated with synthetic samples:
uniform 0..1 for float inputs (a range every float graph accepts), zeros for integer and boolean inputs (an index
or id that is always in range). What such a build cannot tell is accuracy; ``check`` never measures that anyway,
and the report says the data was synthetic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import ModelError
from edge_tool.models.fixed_batch import PROBE_DIM
from edge_tool.models.signatures import saved_model_signature

SAMPLES = 8
NOTE = (
    "no --calibration given: the int8 build was calibrated on synthetic data (uniform 0..1 floats, zero "
    "integers); its ops, types and size are those of a real int8 build, its accuracy is not checked"
)


def write_synthetic_calibration(saved_model: Path, out: Path, signature: str | None = None) -> Path:
    """An .npz of SAMPLES synthetic samples per input of ``saved_model``'s ``signature`` (default serving_default;
    keys: input names)."""
    rng = np.random.default_rng(0)
    arrays = {}
    for spec in saved_model_signature(saved_model, signature or "serving_default").inputs:
        if spec.shape is None:
            raise ModelError(
                f"input {spec.name!r} has an unknown rank; give --calibration data for the int8 "
                "targets (edgetool check --help names them)."
            )
        shape = (SAMPLES, *(PROBE_DIM if d is None else int(d) for d in spec.shape[1:]))
        dtype = np.dtype(spec.dtype)
        arrays[spec.name] = rng.uniform(0, 1, shape).astype(dtype) if dtype.kind == "f" else np.zeros(shape, dtype)
    np.savez(out, **arrays)
    return out
