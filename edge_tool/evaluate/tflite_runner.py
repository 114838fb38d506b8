"""A .tflite artefact under the LiteRT interpreter: input (de)quantization, per-sample inference, signature mapping."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, ModelError, collect_and_raise
from edge_tool.runtime import interpreter_class, load_interpreter


@dataclass(frozen=True)
class TensorBinding:
    """A model input/output: signature name, tensor index, dtype, shape signature, (scale, zero point)."""

    name: str
    index: int
    dtype: np.dtype
    shape: tuple
    scale: float
    zero_point: int

    @property
    def quantized(self) -> bool:
        """True for an integer tensor carrying a scale (its real value is (q - zero_point) * scale)."""
        return np.issubdtype(self.dtype, np.integer) and self.scale != 0.0


def _binding(name: str, d: dict) -> TensorBinding:
    scale, zp = d.get("quantization", (0.0, 0))
    shape = tuple(int(s) for s in d.get("shape_signature", d["shape"]))
    return TensorBinding(name, int(d["index"]), np.dtype(d["dtype"]), shape, float(scale), int(zp))


class TfliteModel:
    """One .tflite model; inputs/outputs keyed by the reference's signature names where the model has them."""

    def __init__(self, path: Path, threads: int = 1):
        self.path = Path(path)
        self.interp = load_interpreter(self.path, num_threads=threads)
        self.runtime = interpreter_class()[1]
        self.inputs, self.outputs = self._bindings()

    def _bindings(self) -> tuple[list[TensorBinding], list[TensorBinding]]:
        sigs = self.interp.get_signature_list()
        if sigs:
            key = "serving_default" if "serving_default" in sigs else sorted(sigs)[0]
            runner = self.interp.get_signature_runner(key)
            ins, outs = runner.get_input_details(), runner.get_output_details()
            return ([_binding(n, ins[n]) for n in sorted(ins)], [_binding(n, outs[n]) for n in sorted(outs)])
        return ([_binding(d["name"], d) for d in self.interp.get_input_details()],
                [_binding(d["name"], d) for d in self.interp.get_output_details()])

    def match_inputs(self, names: list[str]) -> dict[str, TensorBinding]:
        """Map the reference's input names onto this model's inputs (by name; by position if unnamed)."""
        mine = {b.name: b for b in self.inputs}
        if set(names) <= set(mine):
            return {n: mine[n] for n in names}
        if len(names) == len(self.inputs):
            return dict(zip(names, self.inputs))
        raise ModelError(
            f"{self.path} has inputs {sorted(mine)}; expected the reference's inputs {names} (same names or count)."
        )

    def output_for(self, name: str, position: int) -> TensorBinding:
        """This model's output matching the reference output ``name`` (by name, else by position)."""
        for b in self.outputs:
            if b.name == name:
                return b
        if position < len(self.outputs):
            return self.outputs[position]
        raise ModelError(f"{self.path} has outputs {[b.name for b in self.outputs]}; no match for {name!r}.")

    def prepare(self, inputs: dict) -> dict[int, np.ndarray]:
        """Inputs as this model wants them, keyed by tensor index (all samples, batch first).

        Integer inputs with a scale get the data quantized with the model's own scale / zero point
        (q = round(x / scale) + zero_point, clipped); integer inputs without one (a model whose own input is raw
        uint8/int8 pixels) get the data unchanged (checked to fit the dtype).
        """
        problems, feeds = [], {}
        for name, b in self.match_inputs(list(inputs)).items():
            x = np.asarray(inputs[name])
            want, got = b.shape[1:], x.shape[1:]
            if len(want) != len(got) or any(w not in (-1, g) for w, g in zip(want, got)):
                problems.append(f"input {name!r}: data per-sample shape {tuple(got)}, but {self.path.name} expects "
                                f"{tuple(w if w >= 0 else None for w in want)}")
                continue
            feeds[b.index] = self._convert(x, b, problems)
        collect_and_raise(problems, DataError, f"Eval data does not fit {self.path}:")
        return feeds

    @staticmethod
    def _convert(x: np.ndarray, b: TensorBinding, problems: list[str]) -> np.ndarray:
        if b.quantized:
            info = np.iinfo(b.dtype)
            q = np.round(x.astype(np.float64) / b.scale + b.zero_point)
            return np.clip(q, info.min, info.max).astype(b.dtype)
        if np.issubdtype(b.dtype, np.integer):
            info = np.iinfo(b.dtype)
            not_integral = x.dtype.kind == "f" and not np.all(x == np.round(x))
            if not_integral or (x.size and (x.min() < info.min or x.max() > info.max)):
                problems.append(f"input {b.name!r} is raw {b.dtype} without quantization parameters, but the data "
                                f"({x.dtype}, range {x.min()}..{x.max()}) does not fit {b.dtype}")
                return x
            return x.astype(b.dtype)
        return x.astype(b.dtype)

    def dequantize(self, b: TensorBinding, y: np.ndarray) -> np.ndarray:
        """Real values of an output: (q - zero_point) * scale for quantized integer outputs, else as float."""
        if b.quantized:
            return (y.astype(np.float64) - b.zero_point) * b.scale
        return y.astype(np.float64)

    def predict(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Raw outputs by tensor index, one sample at a time (batch 1, the way an edge device runs it)."""
        n = len(next(iter(feeds.values())))
        self._ensure_batch1(feeds)
        outs: dict[int, list] = {b.index: [] for b in self.outputs}
        for i in range(n):
            for idx, x in feeds.items():
                self.interp.set_tensor(idx, x[i:i + 1])
            self.interp.invoke()
            for idx in outs:
                outs[idx].append(self.interp.get_tensor(idx))
        return {idx: np.concatenate(v) for idx, v in outs.items()}

    def _ensure_batch1(self, feeds: dict[int, np.ndarray]) -> None:
        details = {d["index"]: d for d in self.interp.get_input_details()}
        resized = False
        for idx, x in feeds.items():
            shape = [1, *x.shape[1:]]
            if list(details[idx]["shape"]) != shape:
                self.interp.resize_tensor_input(idx, shape)
                resized = True
        if resized:
            self.interp.allocate_tensors()
