"""The input contract as far as the model alone tells it (``edgetool inspect``): what it takes, or that it cannot
be known without labelled data or an option, and how it will be resolved then."""

from __future__ import annotations

from pathlib import Path

from edge_tool.contract.options import ContractOptions
from edge_tool.contract.resolve import resolve

UNKNOWN = (
    "cannot be known from the model alone (no Rescaling/Normalization layer or constant scaling at the input, "
    "no embedded normalization): convert/eval/check/demo measure it with the float reference on a labelled "
    "image folder (--calibration / --data with one sub-folder per class), or take --input-range / "
    "--input-mean/--input-std"
)


def model_contract(path: Path, signature, metadata=None) -> list[dict]:
    """One record per image input: the ImageContract dict with ``known`` (False: see UNKNOWN in ``evidence``).

    ``metadata`` is the .tflite's EmbeddedMetadata (its first image input's normalization counts as the model's
    word unless it is identity, which older converters write by default)."""
    path = Path(path)
    saved = path if path.is_dir() else None
    norm = None
    for t in metadata.inputs if metadata is not None else ():
        stated = t.stated_normalization()
        if stated is not None:
            norm = (stated.mean, stated.std, f"{path.name} (TFLite metadata)")
            break
    model = path if saved is not None or path.suffix.lower() in (".keras", ".h5", ".hdf5") else Path("-")
    resolution = resolve(signature, model, saved, ContractOptions(), None, None, norm)
    out = []
    for c in resolution.contracts:
        known = c.source != "default" or not str(_dtype(signature, c.input)).startswith("float")
        record = {**c.to_dict(), "known": known}
        if not known:
            record["evidence"] = UNKNOWN
        out.append(record)
    return out


def _dtype(signature, name: str) -> str:
    return next((t.dtype for t in signature.inputs if t.name == name), "")
