"""A .tflite artefact under the LiteRT interpreter: input (de)quantization, batched or per-sample inference with the
recurrent state reset before every independent sample, signature mapping. Runs inside eval's worker process
(``tflite_worker``), never in the evaluator itself: an artefact that crashes LiteRT kills only its worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, ModelError, collect_and_raise
from edge_tool.litert.flatbuffer_facts import read_flatbuffer
from edge_tool.litert.runtime import interpreter_class
from edge_tool.parsers.limits import check_tflite_file

# Batched outputs must match per-sample outputs this closely (relative to the output's magnitude) for eval to
# keep batching a model; quantized outputs may differ by at most one quantization step.
BATCH_CHECK_RTOL = 1e-4
BATCH_CHECK_SAMPLES = 2
# A batched invoke takes at most this many bytes of its largest activation: a batch of MobileNetV2's 4.8 MB-per-sample
# activations leaves the cache, and XNNPACK then spends 9.1 ms of CPU per sample at batch 64 against 7.4 at batch 1
# (the same bits); a small model still runs the whole batch in one invoke.
CHUNK_BYTES = 2 << 20
__all__ = ["BATCH_CHECK_RTOL", "BATCH_CHECK_SAMPLES", "TensorBinding", "TfliteInterpreter", "samples_per_invoke"]


def samples_per_invoke(facts) -> int:
    """How many samples one batched invoke takes: as many as keep the largest activation under ``CHUNK_BYTES``."""
    return max(1, CHUNK_BYTES // max(1, facts.activation_bytes))


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


class TfliteInterpreter:
    """One .tflite model; inputs/outputs keyed by the reference's signature names where the model has them.

    ``predict`` runs as many samples per invoke as the file allows: the whole batch (up to ``CHUNK_BYTES`` of its
    largest activation per invoke) when every input's batch dimension is dynamic and the model carries no recurrent
    state (checked once against per-sample results on the first samples: any difference, or a resize LiteRT refuses,
    falls back to batch 1); exactly B when the file
    has a fixed batch B (the last chunk padded); otherwise one sample at a time. Dynamic non-batch dimensions
    (height, width, sequence length) are resized to the data's. Stateful models get their variable tensors reset
    before every invoke, so each sample is independent, as in the reference.
    """

    def __init__(self, path: Path, threads: int = 1):
        self.path = Path(path)
        check_tflite_file(self.path)  # a regular file, and no tensor of its arena over the limit
        self.facts = read_flatbuffer(self.path)
        cls, self.runtime = interpreter_class(self.facts.flex)
        try:
            # not allocated yet: a model with dynamic dims may only prepare once its inputs have their real shape
            self.interp = cls(model_path=str(self.path), num_threads=threads)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"{self.path} is not a loadable TFLite model: {exc}") from None
        self.inputs, self.outputs = self._bindings()
        self.batching = self._batch_policy()
        self.chunk = samples_per_invoke(self.facts)
        self._checked = self.batching != "dynamic"
        self._shapes: dict[int, tuple] | None = None
        self._allocated = False

    def _batch_policy(self) -> str:
        """ "dynamic" (resize to the whole batch), "fixed" (the file's own batch B > 1) or "single"."""
        firsts = {b.shape[0] if b.shape else 1 for b in self.inputs}
        if firsts == {-1} and not self.facts.stateful:
            return "dynamic"
        if len(firsts) == 1 and next(iter(firsts)) > 1:
            return "fixed"
        return "single"

    @property
    def fixed_batch(self) -> int:
        """The file's fixed batch size (1 unless ``batching == "fixed"``)."""
        return self.inputs[0].shape[0] if self.batching == "fixed" else 1

    def describe_batching(self) -> str:
        """How the accuracy pass runs this model, for the report."""
        if self.batching == "dynamic":
            return "batched"
        if self.batching == "fixed":
            return f"fixed batch {self.fixed_batch}"
        if self.facts.state_ops and not self.facts.variable_tensors:
            return "batch 1, one stream in file order from a fresh interpreter (resource-variable state)"
        why = "stateful" if self.facts.stateful else "fixed batch 1"
        return f"batch 1 ({why})"

    def _bindings(self) -> tuple[list[TensorBinding], list[TensorBinding]]:
        sigs = self.interp.get_signature_list()
        if sigs:
            key = "serving_default" if "serving_default" in sigs else sorted(sigs)[0]
            runner = self.interp.get_signature_runner(key)
            ins, outs = runner.get_input_details(), runner.get_output_details()
            return ([_binding(n, ins[n]) for n in sorted(ins)], [_binding(n, outs[n]) for n in sorted(outs)])
        return (
            [_binding(d["name"], d) for d in self.interp.get_input_details()],
            [_binding(d["name"], d) for d in self.interp.get_output_details()],
        )

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
                problems.append(
                    f"input {name!r}: data per-sample shape {tuple(got)}, but {self.path.name} expects "
                    f"{tuple(w if w >= 0 else None for w in want)}"
                )
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
                problems.append(
                    f"input {b.name!r} is raw {b.dtype} without quantization parameters, but the data "
                    f"({x.dtype}, range {x.min()}..{x.max()}) does not fit {b.dtype}"
                )
                return x
            return x.astype(b.dtype, copy=False)
        return x.astype(b.dtype, copy=False)

    def dequantize(self, b: TensorBinding, y: np.ndarray) -> np.ndarray:
        """Real values of an output: (q - zero_point) * scale for quantized integer outputs, strings (a label lookup)
        as bytes (``S``: never an object array, which only a pickle could carry), else as float."""
        if y.dtype.kind in "OSU":
            return np.asarray(y).astype(bytes)
        if b.quantized:
            return (y.astype(np.float64) - b.zero_point) * b.scale
        return y.astype(np.float64)

    def predict(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Raw outputs by tensor index for every sample of ``feeds`` (see the class docstring for batching)."""
        n = len(next(iter(feeds.values())))
        if not self._checked:
            self._checked = True
            self._check_batching(feeds)
        outs: dict[int, list] = {b.index: [] for b in self.outputs}
        start = 0
        while start < n:
            step = min(n, self.chunk) if self.batching == "dynamic" else self.fixed_batch
            chunk = {k: x[start : start + step] for k, x in feeds.items()}
            try:
                result = self._invoke(chunk)
            except (RuntimeError, ValueError):
                if self.batching != "dynamic":
                    raise
                self.batching = "single"  # a batch size LiteRT refuses: the rest one sample at a time
                continue
            for idx, y in result.items():
                outs[idx].append(y)
            start += step
        return {idx: np.concatenate(v) for idx, v in outs.items()}

    def _invoke(self, chunk: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """One invoke on ``chunk`` (padded to the fixed batch if needed); state reset first."""
        m = len(next(iter(chunk.values())))
        if self.batching == "fixed" and m < self.fixed_batch:
            chunk = {k: np.concatenate([x, np.repeat(x[-1:], self.fixed_batch - m, axis=0)]) for k, x in chunk.items()}
        self.fit(chunk)
        if self.facts.variable_tensors:  # resource variables (stateful=True) are a stream: never reset mid-pass
            self.interp.reset_all_variables()
        for idx, x in chunk.items():
            self.interp.set_tensor(idx, x)
        self.interp.invoke()
        return {b.index: self.interp.get_tensor(b.index)[:m] for b in self.outputs}

    def fit(self, chunk: dict[int, np.ndarray]) -> None:
        """Resize inputs whose current shape differs from ``chunk``'s (batch, dynamic H×W…), then allocate."""
        if self._shapes is None:
            self._shapes = {d["index"]: tuple(d["shape"]) for d in self.interp.get_input_details()}
        changed = {idx: x.shape for idx, x in chunk.items() if self._shapes[idx] != x.shape}
        if not changed and self._allocated:
            return
        self._allocated = False
        try:
            for idx, shape in changed.items():
                self.interp.resize_tensor_input(idx, list(shape))
            self.interp.allocate_tensors()
        except (RuntimeError, ValueError):
            self._shapes = None  # re-read after a refused resize
            raise
        self._shapes.update(changed)
        self._allocated = True

    def _check_batching(self, feeds: dict[int, np.ndarray]) -> None:
        """Keep batching only if batched outputs equal per-sample outputs on the first samples."""
        k = min(BATCH_CHECK_SAMPLES, len(next(iter(feeds.values()))))
        head = {i: x[:k] for i, x in feeds.items()}
        try:
            batched = self._invoke(head)
        except (RuntimeError, ValueError):
            self.batching = "single"
            return
        self.batching = "single"
        single = [self._invoke({i: x[j : j + 1] for i, x in head.items()}) for j in range(k)]
        for b in self.outputs:
            per_sample, got = np.concatenate([s[b.index] for s in single]), batched[b.index][:k]
            if per_sample.dtype.kind in "OSU":  # string outputs: batching must give the very same strings
                if got.shape != per_sample.shape or not np.array_equal(got.astype(bytes), per_sample.astype(bytes)):
                    return
                continue
            per_sample, got = per_sample.astype(np.float64), got.astype(np.float64)
            # raw outputs: a quantized one may move by one step (1 in integer units)
            tol = 1.0 if b.quantized else BATCH_CHECK_RTOL * max(1.0, float(np.max(np.abs(per_sample), initial=0)))
            if got.shape != per_sample.shape or np.max(np.abs(got - per_sample), initial=0) > tol:
                return
        self.batching = "dynamic"
