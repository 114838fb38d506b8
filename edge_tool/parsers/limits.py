"""The documented size limits edgetool checks before it reads a file whole or allocates a tensor
(docs/hardening.md, "Size limits"), and the checks themselves.

- ``MAX_TENSOR_BYTES`` (``EDGETOOL_MAX_TENSOR_BYTES``): the bytes one tensor edgetool or a runtime it drives would
  allocate — a model input, a probe or calibration batch of one sample, a static tensor of a .tflite's arena.
  Checked on the signature before any probe, converter self-check, LiteRT allocation, TFJS export or demo page.
- ``MAX_UNPACKED_BYTES`` (``EDGETOOL_MAX_UNPACKED_BYTES``): what a .keras archive may unpack to, in total.
- Fixed by the formats (not overridable): a protobuf (saved_model.pb) or FlatBuffer (.tflite) over 2 GiB cannot be
  parsed; JSON and text documents edgetool reads whole (model.json, config.json, labels, manifests) are capped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from edge_tool.calibration.safe_open import open_regular, read_regular
from edge_tool.calibration.spec import TensorSpec, show_shape
from edge_tool.errors import ModelError, UsageError
from edge_tool.parsers.tflite_indices import check_indices
from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema

TENSOR_ENV = "EDGETOOL_MAX_TENSOR_BYTES"
UNPACKED_ENV = "EDGETOOL_MAX_UNPACKED_BYTES"
MAX_TENSOR_BYTES = 1 << 30  # 1 GiB: a 1×16384×16384×1 float32 image; a 1×100000×100000×3 one is 120 GB
MAX_UNPACKED_BYTES = 8 << 30  # 8 GiB unpacked from one .keras archive
PROTOBUF_MAX = (2 << 30) - 1  # protobuf cannot parse a message of 2 GiB or more
FLATBUFFER_MAX = 2 << 30  # FlatBuffers address at most 2 GiB
MAX_DOCUMENT_BYTES = 256 << 20  # any JSON/text document edgetool reads whole (model.json, config.json, manifests)
MAX_SMALL_TEXT_BYTES = 64 << 20  # sidecars read whole (train.json)
_ITEMSIZE = {"string": 8, "bool": 1, "bfloat16": 2, "float16": 2, "half": 2, "resource": 8, "variant": 8}


def limit_from_env(name: str, default: int) -> int:
    """``default``, or the positive byte count in the environment variable ``name`` (UsageError when malformed)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise UsageError(f"{name} must be a positive number of bytes, got {raw!r}.")
    return value


def max_tensor_bytes() -> int:
    """The tensor limit in force (``EDGETOOL_MAX_TENSOR_BYTES`` or the default 1 GiB)."""
    return limit_from_env(TENSOR_ENV, MAX_TENSOR_BYTES)


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name (numpy names, 'string' counted as one pointer)."""
    import numpy as np  # noqa: PLC0415

    try:
        return np.dtype(dtype).itemsize or 1
    except TypeError:
        return _ITEMSIZE.get(str(dtype), 8)


def tensor_bytes(shape: Iterable[int | None] | None, dtype: str, batch: int = 1) -> int:
    """Bytes of a tensor of ``shape`` (None / negative dims taken as ``batch`` for the first, 1 elsewhere)."""
    dims = [
        batch if i == 0 and (d is None or d < 0) else (1 if d is None or d < 0 else int(d))
        for i, d in enumerate(shape or ())
    ]
    return math.prod(dims) * itemsize(dtype)


def _human(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} bytes"


def too_large(
    what: str, name: str, shape, dtype: str, need: int, limit: int, per: str = " for one sample"
) -> ModelError:
    """The refusal for one tensor over the limit, naming it, its shape and size, the limit and how to raise it
    (``per``: what the size is for; "" for a size a file declares)."""
    return ModelError(
        f"{what} {name!r} of shape {show_shape(shape) if shape is not None else '(unknown)'} {dtype} needs "
        f"{need:,} bytes ({_human(need)}){per}, over edgetool's {_human(limit)} limit for one tensor; "
        f"refusing before allocating it. Raise the limit with {TENSOR_ENV}=BYTES if this machine really has "
        "the memory."
    )


def check_specs(specs: Iterable[TensorSpec], what: str = "input") -> None:
    """ModelError naming the first tensor of ``specs`` whose one-sample size exceeds ``max_tensor_bytes()``."""
    limit = max_tensor_bytes()
    for spec in specs:
        shape = spec.shape if isinstance(spec.shape, tuple) else None
        need = tensor_bytes(shape, spec.dtype)
        if need > limit:
            raise too_large(what, spec.name, shape, spec.dtype, need, limit)


def check_signature(info, model: Path | str) -> None:
    """The inputs and outputs of a SignatureInfo against the tensor limit (ModelError naming the tensor)."""
    check_specs(info.inputs, f"{model}: input")
    check_specs(info.outputs, f"{model}: output")


def check_tflite_file(path: Path | str) -> None:
    """``check_tflite_tensors`` on the regular file ``path`` (at most 2 GiB), memory-mapped rather than read."""
    import mmap  # noqa: PLC0415

    with open_regular(path, "a .tflite file", ModelError, FLATBUFFER_MAX, "FlatBuffers cannot be larger") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            check_tflite_tensors(data, path)


def check_tflite_tensors(data, path: Path | str) -> None:
    """Every tensor a runtime would allocate (inputs, outputs, intermediates: not the constants, which stay in the
    file) of a .tflite flatbuffer (bytes or a memory map) against the tensor limit, before LiteRT allocates its
    arena; ModelError naming the tensor."""
    if data[4:8] == b"TFL3":  # every index in range before any is followed (here and by LiteRT)
        check_indices(data, path)
    limit = max_tensor_bytes()
    schema = tflite_schema()
    try:
        model = schema.Model.GetRootAsModel(data, 0)
        type_names = enum_names(schema.TensorType)
        for s in range(model.SubgraphsLength()):
            sg = model.Subgraphs(s)
            for t in range(sg.TensorsLength()):
                tensor = sg.Tensors(t)
                if is_constant(model, tensor):  # weights live in the file (memory-mapped), not in the arena
                    continue
                shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
                dtype = type_names.get(tensor.Type(), "float32").lower()
                need = tensor_bytes(shape, dtype)
                if need > limit:
                    name = (tensor.Name() or b"").decode("utf-8", "replace")
                    raise too_large(f"{path}: tensor", name, shape, dtype, need, limit)
    except ModelError:
        raise
    except Exception:
        return


def read_tflite(path: Path | str) -> bytes:
    """The bytes of the .tflite file ``path``: a regular file of at most 2 GiB whose flatbuffer indices are all in
    range (``tflite_indices.check_indices``; ModelError naming it otherwise)."""
    data = read_regular(path, "a .tflite file", ModelError, FLATBUFFER_MAX, "FlatBuffers cannot be larger")
    if data[4:8] == b"TFL3":  # other bytes are refused by each caller with its own message (not a TFLite file)
        check_indices(data, path)
    return data
