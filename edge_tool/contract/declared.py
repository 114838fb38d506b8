"""Which inputs are images (layout, size, channels) and what the model itself says about their scaling."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration.contract import ImageContract
from edge_tool.contract.graph import graph_scaling
from edge_tool.contract.keras_config import input_scaling, keras_file_config, saved_model_config

KERAS_FILES = (".keras", ".h5", ".hdf5")
MIN_SIDE = 8  # a [N, 256, 1] waveform or [N, 4, 4] table is not a picture


def image_contract(spec) -> ImageContract | None:
    """The layout part of the contract for an image-like input (NHWC/NCHW with 1 or 3 channels, or NHW), with the
    default normalization (raw 0..255); None for anything else."""
    shape, dtype = spec.shape, str(spec.dtype)
    if shape is None or not (dtype.startswith("float") or dtype in ("uint8", "int8", "int32", "int64")):
        return None
    dims = shape[1:]
    layout = None
    if len(dims) == 3 and dims[2] in (1, 3):
        layout, (h, w, c) = "NHWC", dims
    elif len(dims) == 3 and dims[0] in (1, 3) and dims[2] not in (1, 3, 4):
        layout, (c, h, w) = "NCHW", dims
    elif len(dims) == 2 and dtype.startswith("float") and all(d is None or d >= MIN_SIDE for d in dims):
        layout, (h, w), c = "NHW", dims, 1
    if layout is None or any(d is not None and d < MIN_SIDE for d in (h, w)):
        return None
    return ImageContract(
        spec.name, layout, h, w, c, "L" if c == 1 else "RGB", (0.0,), (1.0,), evidence="nothing says otherwise"
    )


def _config(model: Path, saved_model: Path | None) -> tuple[dict | None, str]:
    model = Path(model)
    if model.is_file() and model.suffix.lower() in KERAS_FILES:
        return keras_file_config(model), f"{model.name}'s config"
    for where in (model, saved_model):
        if where is not None and Path(where).is_dir():
            doc = saved_model_config(Path(where))
            if doc is not None:
                return doc, "keras_metadata.pb"
    return None, ""


def declared(
    contract: ImageContract, spec, model: Path, saved_model: Path | None, n_images: int
) -> ImageContract | None:
    """``contract`` as the model itself declares it (source "model"), or None when it is silent.

    Integer inputs take raw pixels. For one image input, a Keras config (Keras-2 SavedModel, .keras, .h5) whose
    first layers scale the input by constants (``keras_config.input_scaling``), or constant Mul/Sub/RealDiv/Add
    ops right after the input in the serving graph (``graph_scaling``), show the model scales pixels itself: it
    takes raw 0..255 values (mean 0, std 1), and the evidence names what it does with them.
    """
    if not str(spec.dtype).startswith("float"):
        return contract.with_normalization((0.0,), (1.0,), "model", f"the input is {spec.dtype}: raw pixel values")
    if n_images != 1:
        return None
    doc, where = _config(model, saved_model)
    scaling = input_scaling(doc) if doc else None
    if scaling is None and saved_model is not None:
        scaling, where = graph_scaling(Path(saved_model), spec.name), "the serving graph"
    if scaling is None:
        return None
    mean, std = scaling.mean_std()
    lo, hi = sorted(((0.0 - mean[0]) / std[0], (255.0 - mean[0]) / std[0]))
    return contract.with_normalization(
        (0.0,),
        (1.0,),
        "model",
        f"{where}: {', '.join(scaling.layers)} at the input maps 0..255 pixels to "
        f"{lo:.3g}..{hi:.3g} itself, so it takes raw pixel values",
    )


def from_metadata(contract: ImageContract, mean, std, origin: str) -> ImageContract | None:
    """``contract`` with a normalization read from embedded metadata (TFLite NormalizationOptions, TFJS
    userDefinedMetadata), source "metadata"; None when the channel counts do not fit."""
    mean, std = tuple(mean or (0.0,)), tuple(std or (1.0,))
    if len(mean) not in (1, contract.channels) or len(std) not in (1, contract.channels) or any(s == 0 for s in std):
        return None
    return contract.with_normalization(mean, std, "metadata", f"normalization embedded in {origin}")
