"""Feed calibration samples to TFLite's tooling by input name, never by position.

A SavedModel signature's inputs have names but no order TFLite keeps: the converted model's input tensors come
in whatever order the MLIR importer emits them (``features, image, tokens`` sorted by name in the signature may
be ``image, features, tokens`` as tensors). The converter's calibrator matches ``{input name: array}`` samples
to the signature (``Calibrator._feed_tensors`` → ``get_signature_runner().get_input_details()``), so every
representative dataset here yields dicts. ``tf.lite.experimental.QuantizationDebugger`` feeds its
``debug_dataset`` by tensor position only, so for it (``evaluate.per_layer``) the names are put in the debug
model's own input-tensor order (``input_order``), read from that model's signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from edge_tool.errors import ConversionError
from edge_tool.litert.runtime import interpreter_class


def samples_by_name(inputs: Mapping[str, np.ndarray], limit: int | None = None) -> Callable[[], Iterator[dict]]:
    """Representative-dataset generator function: one ``{name: array with batch 1}`` per step."""
    n = min(len(v) for v in inputs.values()) if inputs else 0
    n = n if limit is None else min(n, limit)

    def gen() -> Iterator[dict]:
        for i in range(n):
            yield {name: arr[i : i + 1] for name, arr in inputs.items()}

    return gen


def input_order(model: bytes, names: list[str]) -> list[str]:
    """``names`` ordered like the input tensors of the .tflite ``model`` (matched through its signature).

    Without a signature, tensor names such as ``serving_default_image:0`` are matched; a single input needs no
    matching. ConversionError when the inputs cannot be matched by name.
    """
    if len(names) == 1:
        return list(names)
    cls, _ = interpreter_class()
    interp = cls(model_content=bytes(model))
    sigs = interp.get_signature_list()
    if len(sigs) == 1:
        details = interp.get_signature_runner(next(iter(sigs))).get_input_details()
        by_index = {d["index"]: name for name, d in details.items()}
    else:
        by_index = {}
        for d in interp.get_input_details():
            tensor = d["name"].split(":", 1)[0]
            found = [n for n in names if tensor == n or tensor.endswith("_" + n)]
            if len(found) == 1:
                by_index[d["index"]] = found[0]
    order = [by_index.get(d["index"]) for d in interp.get_input_details()]
    if sorted(n for n in order if n is not None) != sorted(names):
        raise ConversionError(
            f"cannot match the calibration inputs {', '.join(names)} to the converted model's input tensors "
            f"({', '.join(d['name'] for d in interp.get_input_details())}) by name."
        )
    return order
