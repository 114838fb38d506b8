"""The one tensor-spec type of edgetool (model inputs and outputs), and the checks that make one a calibration input.

``TensorSpec`` is built by ``edge_tool.models.signatures`` for every signature it reads and by users for ``load``;
``InputSpec`` is the same class under the name the calibration API has always used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import UsageError, collect_and_raise
from .serial import Record


def show_shape(shape: Sequence[int | None]) -> str:
    """Render a shape with unknown dims as "any", e.g. ``(any, 8, 8, 1)``."""
    parts = ["any" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


@dataclass(frozen=True)
class TensorSpec(Record):
    """One model input or output: signature name, numpy dtype name, shape (None = batch / unknown dim; the
    shape itself is None when even the rank is unknown).

    Construction normalises without judging: a numeric dtype becomes numpy's name for it (``np.float32``,
    ``"f4"`` → ``"float32"``), a shape becomes a tuple with negative dims as None. Whether the spec can be fed
    calibration data is ``input_problems``' question (asked by ``load``, ``SourceStream`` and ``specs_from``).
    """

    name: str
    dtype: str
    shape: tuple | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        object.__setattr__(self, "shape", _normal_shape(self.shape))

    @property
    def sample_shape(self) -> tuple:
        """The shape of one sample (the spec shape without its batch dim)."""
        return self.shape[1:]


InputSpec = TensorSpec


STRING = "string"  # what a TensorFlow/TFLite string tensor is called everywhere (numpy says object or bytes_)


def dtype_name(dtype: Any) -> Any:
    """numpy's name for a numeric dtype; ``"string"`` for text (object, bytes, str: how numpy holds a tf.string);
    anything else (bfloat16, unknown names) as given."""
    import numpy as np  # noqa: PLC0415  (importing the spec type, as edge_tool.models.signatures does, costs no NumPy)

    if dtype == STRING:
        return STRING
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return dtype
    if dt.kind in "OSU":
        return STRING
    return dt.name if dt.kind in "biufc" else dtype


def _normal_shape(shape: Any) -> Any:
    """A tuple of ints and None (negative dims as None); None (unknown rank) or a malformed shape as given."""
    try:
        return tuple(None if d is None or int(d) < 0 else int(d) for d in shape)
    except (TypeError, ValueError):
        return shape


def input_problems(spec: TensorSpec, text: bool = False) -> list[str]:
    """Why ``spec`` cannot be a calibration input (no name, a non-numeric dtype, no batch dim), or []; with ``text``
    (eval's data) a string input may be fed text."""
    import numpy as np  # noqa: PLC0415

    problems = []
    if not isinstance(spec.name, str) or not spec.name:
        problems.append(f"input name must be a non-empty string, got {spec.name!r}")
    try:
        dt = np.dtype(spec.dtype if spec.dtype != STRING else object)
        if dt.kind not in "biuf" and not (text and spec.dtype == STRING):
            problems.append(
                f"input {spec.name!r}: dtype {dtype_name(dt)} is not numeric; "
                "calibration supports bool/int/float inputs"
            )
    except TypeError:
        problems.append(f"input {spec.name!r}: unknown dtype {spec.dtype!r} (use a numpy dtype name such as 'float32')")
    if not isinstance(spec.shape, tuple):
        problems.append(f"input {spec.name!r}: shape must be a tuple of ints/None, got {spec.shape!r}")
    elif not spec.shape:
        problems.append(f"input {spec.name!r}: shape must include the batch dim, got ()")
    return problems


def specs_from(infos: Sequence[TensorSpec], text: bool = False) -> tuple[TensorSpec, ...]:
    """A signature's inputs as calibration input specs, in order; UsageError when one cannot be fed data (with
    ``text``, a string input can: eval's data)."""
    specs = tuple(infos)
    for spec in specs:
        collect_and_raise(input_problems(spec, text), UsageError, "invalid input spec:")
    return specs


def validate_specs(specs: Sequence[TensorSpec], text: bool = False) -> tuple[TensorSpec, ...]:
    """Check every spec can be fed data (see input_problems) and the list is non-empty with unique names."""
    specs = tuple(specs)
    bad = [s for s in specs if not isinstance(s, TensorSpec)]
    specs_from((s for s in specs if isinstance(s, TensorSpec)), text)
    problems = []
    if not specs:
        problems.append("the model has no inputs to calibrate")
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"input names must be unique, repeated: {', '.join(dupes)}")
    if bad:
        problems.append(f"specs must be InputSpec objects, got {type(bad[0]).__name__}")
    collect_and_raise(problems, UsageError, "invalid input specs:")
    return specs


@dataclass(frozen=True)
class SignatureInfo(Record):
    """A callable signature of a model: its key and input/output specs."""

    key: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
