"""``demo model.tflite``: a float or quantized .tflite (a model hub's, ``convert model.tflite``'s) as the demo's
model. TensorFlow.js cannot run a .tflite, so the site is a LiteRT.js-only page running the file itself (as
``--litert --tflite FILE``); its signature, labels and input normalization are read from the file and its metadata."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import flatbuffers
import numpy as np

from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.model import Tensor
from edge_tool.errors import ModelError
from edge_tool.litert.runtime import load_interpreter
from edge_tool.metadata.carry import carry_associated_files
from edge_tool.metadata.reader import read_metadata
from edge_tool.models.signatures import tflite_signature
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.tflite_schema import tflite_schema

NO_TFJS = (
    "a .tflite runs in LiteRT.js only: TensorFlow.js needs the SavedModel or Keras file the .tflite was made from "
    "(demo that for both engines)"
)


def is_tflite_model(path: Path) -> bool:
    """True for a .tflite file given as demo's MODEL."""
    return Path(path).suffix.lower() == ".tflite" and Path(path).is_file()


def as_litert_site(cfg: DemoConfig) -> DemoConfig:
    """``cfg`` for a .tflite MODEL: the LiteRT.js engine running that very file, or its batch-1 copy when its batch
    is free (LiteRT.js runs fixed shapes; ``batch_one``)."""
    fixed = batch_one(read_tflite(cfg.model))
    if fixed is None:
        return replace(cfg, litert=True, tflite=Path(cfg.model))
    copy = Path(tempfile.mkdtemp(prefix="edgetool-demo-")) / Path(cfg.model).name  # inside the run's temp dir
    copy.write_bytes(fixed)
    check_same_outputs(Path(cfg.model), copy)
    console.print(f"demo: {term(Path(cfg.model).name)} has a free batch; the page runs it at batch 1 (checked equal)")
    return replace(cfg, litert=True, tflite=copy)


def batch_one(data: bytes) -> bytes | None:
    """``data`` with every free batch dimension (a leading -1 in a tensor's shape signature) fixed to 1, its
    associated files (labels) kept; None when no batch is free. Other free dimensions stay free."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    changed = False
    for sg in model.subgraphs:
        for t in sg.tensors:
            sig = t.shapeSignature
            if sig is not None and len(sig) and int(sig[0]) == -1:
                t.shapeSignature = [1, *(int(d) for d in sig[1:])]
                changed = True
    if not changed:
        return None
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), b"TFL3")
    return carry_associated_files(data, bytes(b.Output()))[0]


def check_same_outputs(original: Path, fixed: Path) -> None:
    """ModelError unless ``fixed`` gives ``original``'s outputs (bit for bit) on one seeded batch-1 input."""
    got = []
    for path in (original, fixed):
        interp = load_interpreter(path, allocate=False)
        runner = interp.get_signature_runner() if interp.get_signature_list() else None
        if runner is None:
            return  # no signature: tflite_spec refuses it with its own reason
        feeds = {}
        for name, d in runner.get_input_details().items():
            shape = [1 if s < 0 else int(s) for s in d.get("shape_signature", d["shape"])]
            feeds[name] = (np.random.default_rng(0).random(shape) * 2).astype(d["dtype"])
        got.append(runner(**feeds))
    same = all(np.array_equal(np.asarray(got[0][k]), np.asarray(got[1][k])) for k in got[0])
    if not same:
        raise ModelError(
            f"{original} has a free batch and LiteRT.js runs fixed shapes, but its batch-1 form does not compute "
            "what it computes; re-export the .tflite with batch 1."
        )


def tflite_tensors(path: Path) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """(inputs, outputs) of the file's signature (the one LiteRT runs) as the demo's Tensor records."""
    sig = tflite_signature(path)

    def tensors(specs) -> tuple[Tensor, ...]:
        return tuple(Tensor(t.name, t.name, t.dtype, tuple(t.shape or ())) for t in specs)

    return tensors(sig.inputs), tensors(sig.outputs)


def tflite_normalization(path: Path) -> tuple | None:
    """(mean, std, origin) of the first image input the file's metadata normalizes (not identity), or None."""
    meta = read_metadata(read_tflite(path))
    for t in meta.inputs if meta is not None else ():
        if (stated := t.stated_normalization()) is not None:
            return list(stated.mean), list(stated.std), f"{Path(path).name} (TFLite metadata)"
    return None
