"""A graph's constants moved into tfjs weight shards, encoded as tfjs-core's weight loader decodes them.

Every ``Const`` node (main graph and function library) keeps its dtype and shape in the topology; its values go
into the weightsManifest under the node's name (library constants are renamed ``FUNCTION/NAME``, so names stay
unique). Values are written little-endian, one group of shards of at most ``SHARD_BYTES``: float32, int32
(int64/int16/int8/uint8 constants narrowed to int32, as tfjs holds every integer), bool as one byte, strings as a
uint32 byte length then the bytes. ``--tfjs-quant`` compresses float32 weights: float16 (IEEE half; a weight
beyond half's range stays float32), or uint8/uint16 affine (value = q * scale + min, with min nudged so 0.0 is
exactly representable and zero padding stays zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError

SHARD_BYTES = 4 * 1024 * 1024  # tfjs' default; browsers fetch the shards in parallel
QUANT_LEVELS = {"uint8": 255, "uint16": 65535}
_TEXT_FIELDS = ("tensor_content", "float_val", "double_val", "int_val", "int64_val", "bool_val", "string_val")
_HALF_MAX = 65504.0


@dataclass(frozen=True)
class Weight:
    """One constant: its weight name, the values as tfjs will hold them, the manifest entry and the bytes written;
    a streamed weight (a big float32 variable, ``standins``) holds its variable instead of values and bytes, and
    encodes it (``spec``'s quantization) a block of rows at a time whenever its bytes or values are asked for."""

    name: str
    values: np.ndarray | None
    spec: dict
    data: bytes | None
    variable: object = None

    @property
    def size(self) -> int:
        """The number of bytes this weight takes in the shards."""
        if self.data is not None:
            return len(self.data)
        coded = self.spec.get("quantization", {}).get("dtype")
        return _BYTES.get(coded, 4) * int(np.prod(self.spec["shape"], dtype=np.int64))

    def pieces(self):
        """The bytes written for this weight, in order: a streamed one's read from its variable and encoded now, a
        slice of rows (about ``SHARD_BYTES`` of float32) at a time."""
        if self.data is not None:
            yield self.data
            return
        for block in blocks(self.variable):
            yield memoryview(_encoded(block, self.spec.get("quantization"))[0]).cast("B")

    def decoded(self) -> np.ndarray:
        """The values tfjs will hold (a streamed weight's decoded into one array, a block of rows at a time)."""
        if self.values is not None:
            return self.values
        out = aligned_empty(self.spec["shape"])
        start = 0
        for block in blocks(self.variable):
            out[start : start + len(block)] = _encoded(block, self.spec.get("quantization"))[1]
            start += len(block)
        return out


_BYTES = {"float16": 2, "uint16": 2, "uint8": 1}
_ALIGN = 64  # TensorFlow feeds a numpy array aligned to this without copying it (EIGEN_MAX_ALIGN_BYTES)


def aligned_empty(shape: list[int]) -> np.ndarray:
    """An uninitialised float32 array of ``shape`` whose data starts on a ``_ALIGN``-byte boundary."""
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(4 * count + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start : start + 4 * count].view(np.float32).reshape(shape)


def blocks(variable):
    """``variable``'s values as little-endian float32 arrays of consecutive rows, about ``SHARD_BYTES`` each."""
    shape = [int(d) for d in variable.shape]
    rows = max(1, SHARD_BYTES // max(1, 4 * int(np.prod(shape[1:], dtype=np.int64))))
    for start in range(0, shape[0], rows):
        yield np.ascontiguousarray(variable[start : start + rows].numpy(), "<f4")


def _encoded(block: np.ndarray, quantization: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """(the bytes' array, the values tfjs decodes) of float32 ``block`` under a weight's ``quantization``."""
    if quantization is None:
        return block, block
    if quantization["dtype"] == "float16":
        half = block.astype("<f2")
        return half, half.astype(np.float32)
    levels = QUANT_LEVELS[quantization["dtype"]]
    codes, back = _affine_codes(block, quantization["scale"], quantization["min"], levels)
    return codes.astype("<u1" if levels == 255 else "<u2"), back


def _tfjs_dtype(values: np.ndarray) -> tuple[str, np.ndarray]:
    kind = values.dtype.kind
    if values.dtype == np.bool_:
        return "bool", values.astype(np.uint8)
    if kind in "iu":
        if values.size and (values.min() < -(2**31) or values.max() > 2**31 - 1):
            values = np.clip(values, -(2**31), 2**31 - 1)  # int64 sentinels (e.g. strided-slice ends): saturate
        return "int32", values.astype("<i4")
    if kind == "f":
        return "float32", values.astype("<f4")
    if kind == "c":
        return "complex64", values.astype("<c8")
    if kind in "SOU":
        return "string", values
    raise ConversionError(f"TensorFlow.js has no weight dtype for a {values.dtype} constant.")


def _string_bytes(values: np.ndarray) -> bytes:
    out = bytearray()
    for item in values.reshape(-1):
        raw = item if isinstance(item, bytes) else str(item).encode()
        out += np.uint32(len(raw)).astype("<u4").tobytes() + raw
    return bytes(out)


def _affine_params(low: float, high: float, levels: int) -> tuple[float, float]:
    """(scale, min) of the affine codes for values in [low, high], min nudged so 0.0 is exactly representable."""
    lo, hi = min(low, 0.0), max(high, 0.0)
    scale = (hi - lo) / levels if hi > lo else 1.0
    zero = round(-lo / scale)
    return scale, -zero * scale


def _affine_codes(values: np.ndarray, scale: float, lo: float, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(codes, dequantized values) of ``values``, element by element."""
    codes = np.clip(np.round((values.astype(np.float64) - lo) / scale), 0, levels)
    return codes, (codes * scale + lo).astype(np.float32)


def _affine(values: np.ndarray, levels: int) -> tuple[np.ndarray, float, float, np.ndarray]:
    """(codes, scale, min, dequantized) with 0.0 exactly representable."""
    scale, lo = _affine_params(float(values.min()), float(values.max()), levels)
    codes, back = _affine_codes(values, scale, lo, levels)
    dtype = np.uint8 if levels == 255 else np.uint16
    return codes.astype(dtype), float(scale), float(lo), back


def encode(name: str, values: np.ndarray, quant: str) -> Weight:
    """One weight's manifest entry and bytes (``quant``: none, float16, uint8 or uint16 for float32 weights)."""
    dtype, held = _tfjs_dtype(np.asarray(values))
    spec = {"name": name, "shape": [int(d) for d in held.shape], "dtype": dtype}
    if dtype == "string":
        return Weight(name, held, spec, _string_bytes(held))
    if dtype == "float32" and quant == "float16" and held.size and np.abs(held).max() <= _HALF_MAX:
        half = held.astype("<f2")
        spec["quantization"] = {"dtype": "float16", "original_dtype": "float32"}
        return Weight(name, half.astype(np.float32), spec, half.tobytes())
    if dtype == "float32" and quant in QUANT_LEVELS and held.size:
        codes, scale, lo, back = _affine(held, QUANT_LEVELS[quant])
        spec["quantization"] = {"dtype": quant, "scale": scale, "min": lo, "original_dtype": "float32"}
        return Weight(name, back, spec, codes.astype("<u1" if quant == "uint8" else "<u2").tobytes())
    return Weight(name, held, spec, held.tobytes())


def _streamed(name: str, variable, quant: str) -> Weight:
    """A big float32 variable's weight, its bytes encoded as ``encode`` encodes them (one pass over its blocks
    finds the range ``--tfjs-quant`` needs); one holding NaN is encoded whole, as ``encode`` does."""
    spec = {"name": name, "shape": [int(d) for d in variable.shape], "dtype": "float32"}
    if quant == "none":
        return Weight(name, None, spec, None, variable)
    low, high, peak = np.inf, -np.inf, 0.0
    for block in blocks(variable):
        if np.isnan(block).any():
            return encode(name, variable.numpy(), quant)
        low, high = min(low, float(block.min())), max(high, float(block.max()))
        peak = max(peak, float(np.abs(block).max()))
    if quant == "float16" and peak <= _HALF_MAX:
        spec["quantization"] = {"dtype": "float16", "original_dtype": "float32"}
    elif quant in QUANT_LEVELS:
        scale, lo = _affine_params(low, high, QUANT_LEVELS[quant])
        spec["quantization"] = {"dtype": quant, "scale": float(scale), "min": float(lo), "original_dtype": "float32"}
    return Weight(name, None, spec, None, variable)


def _take_consts(nodes, prefix: str | None, quant: str, streamed: dict) -> list[Weight]:
    """Strip the values of every Const in ``nodes`` (renamed under ``prefix`` in a function) into weights."""
    tf = import_tf()
    consts = {n.name for n in nodes if n.op == "Const"}
    weights = []
    for node in nodes:
        if node.op == "Const" and not prefix and node.name in streamed:
            weights.append(_streamed(node.name, streamed[node.name], quant))
        elif node.op == "Const":
            tensor = node.attr["value"].tensor
            values = tf.make_ndarray(tensor)
            if prefix:
                node.name = f"{prefix}/{node.name}"
            weights.append(encode(node.name, values, quant))
            for field_name in _TEXT_FIELDS:
                tensor.ClearField(field_name)
        elif prefix:
            for i, ref in enumerate(node.input):
                base = ref.lstrip("^").split(":")[0]
                if base in consts:
                    node.input[i] = ("^" if ref.startswith("^") else "") + f"{prefix}/{ref.lstrip('^')}"
    return weights


def extract_weights(graph_def, quant: str, streamed: dict | None = None) -> list[Weight]:
    """Move every constant of ``graph_def`` (changed in place) into weights, main graph first; a main-graph Const
    named in ``streamed`` (name -> variable, ``standins``) is read from its variable."""
    weights = _take_consts(graph_def.node, None, quant, streamed or {})
    for fn in graph_def.library.function:
        weights += _take_consts(fn.node_def, fn.signature.name, quant, {})
    return weights


def write_shards(weights: list[Weight], out_dir: Path, shard_bytes: int = SHARD_BYTES) -> list[dict]:
    """Write the weights' bytes, in order, as group1-shardKofN.bin files of ``shard_bytes`` each (the last one
    shorter) in ``out_dir``, one weight at a time (never all of them joined); return the weightsManifest."""
    count = max(1, -(-sum(w.size for w in weights) // shard_bytes))
    paths = [f"group1-shard{k + 1}of{count}.bin" for k in range(count)]
    files = iter(paths)
    out, room = (Path(out_dir) / next(files)).open("wb"), shard_bytes
    try:
        for data in (memoryview(piece).cast("B") for weight in weights for piece in weight.pieces()):
            while len(data):
                if not room:
                    out.close()
                    out, room = (Path(out_dir) / next(files)).open("wb"), shard_bytes
                out.write(data[:room])
                data, room = data[room:], room - min(room, len(data))
    finally:
        out.close()
    return [{"paths": paths, "weights": [w.spec for w in weights]}]
