"""QAT ships only when it beats plain int8 PTQ: both .tflite files measured on the same held-out data in LiteRT."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.serial import Record, spec
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.qat.data import Labelled
from edge_tool.qat.finetune import predict
from edge_tool.qat.heads import Head, accuracy

LARGE_DROP = 0.05  # accuracy below float beyond which the decision carries a hint


@dataclass(frozen=True)
class Decision(Record):
    """Which int8 model was written for ``--quant qat`` and why (manifest.json's ``artifacts[].qat``, with the
    run's training notes beside it); ``note``, derived, is a hint when even the shipped int8 model is far below
    float (int8 itself is the limit, not QAT)."""

    shipped: str  # "qat" or "ptq-int8"
    reason: str
    accuracy: dict  # {"float": f, "qat": q or None, "ptq_int8": p or None} on the held-out data
    held_out: dict  # {"source": ..., "samples": n}
    failures: dict = field(default_factory=dict, metadata=spec(omit="empty"))  # {"qat"/"ptq_int8": why}
    note: str | None = field(init=False, metadata=spec(omit="empty"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "note", _large_drop_note(self.accuracy))


def _large_drop_note(accuracy: dict) -> str | None:
    best = max((v for k, v in accuracy.items() if k != "float" and v is not None), default=None)
    if best is None or accuracy["float"] - best <= LARGE_DROP:
        return None
    return (
        f"both int8 models are {accuracy['float'] - best:.1%} below float: one int8 scale per tensor "
        "cannot hold this model's value ranges (raw inputs of very different scales are typical); "
        "--quant int16x8 or dynamic keep more precision"
    )


def tflite_accuracy(tflite: bytes, data: Labelled, heads: tuple[Head, ...]) -> float:
    """Mean top-1 accuracy over ``heads`` of a .tflite on ``data`` (LiteRT, one sample at a time)."""
    with tempfile.TemporaryDirectory(prefix="edgetool-qat-eval-") as tmp:
        path = Path(tmp) / "candidate.tflite"
        path.write_bytes(tflite)
        model = TfliteInterpreter(path)
        raw = model.predict(model.prepare(data.x))
        outputs = {}
        for h in heads:
            binding = model.output_for(h.name, h.index)
            outputs[h.index] = model.dequantize(binding, raw[binding.index])
    return accuracy(heads, outputs, [data.y[h.name] for h in heads])


def _measure(tflite: bytes | None, data: Labelled, heads: tuple[Head, ...], failures: dict, key: str):
    """Accuracy of a candidate, or None (with the reason in ``failures``) when it was not built or does not run."""
    if tflite is None:
        return None
    try:
        return round(tflite_accuracy(tflite, data, heads), 6)
    except (EdgeToolError, RuntimeError, ValueError) as exc:  # LiteRT refuses to prepare/run it
        failures[key] = f"does not run in LiteRT: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        return None


def decide(
    qat: bytes | None,
    ptq: bytes | None,
    failures: dict,
    data: Labelled,
    heads: tuple[Head, ...],
    float_accuracy: float,
    source: str,
) -> tuple[bytes, Decision]:
    """Measure both candidates on ``data``; QAT ships when at least as accurate as PTQ, else PTQ (and why).

    A candidate that was not built or does not run in LiteRT (with its default XNNPACK delegate, as on a
    device) cannot ship while the other one runs.
    """
    if qat is None and ptq is None:
        raise ConversionError(
            "Neither QAT nor plain int8 produced a model: " + " ".join(f"{k}: {v}" for k, v in failures.items())
        )
    acc = {
        "float": round(float_accuracy, 6),
        "qat": _measure(qat, data, heads, failures, "qat"),
        "ptq_int8": _measure(ptq, data, heads, failures, "ptq_int8"),
    }
    held = {"source": source, "samples": len(data)}
    if acc["qat"] is not None and acc["ptq_int8"] is not None:
        if acc["qat"] >= acc["ptq_int8"]:
            return qat, Decision(
                "qat",
                f"QAT {acc['qat']:.4f} >= int8 PTQ {acc['ptq_int8']:.4f} on the held-out data",
                acc,
                held,
                failures,
            )
        return ptq, Decision(
            "ptq-int8",
            f"QAT {acc['qat']:.4f} < int8 PTQ {acc['ptq_int8']:.4f} on the held-out "
            "data: fine-tuning did not help this model, so the plain int8 result is "
            "written",
            acc,
            held,
            failures,
        )
    if acc["qat"] is not None:
        return qat, Decision(
            "qat", f"plain int8 PTQ {failures.get('ptq_int8', 'could not be measured')}", acc, held, failures
        )
    if ptq is not None:
        why = failures.get("qat", "could not be measured")
        return ptq, Decision("ptq-int8", f"the QAT model {why}", acc, held, failures)
    return qat, Decision(
        "qat", "plain int8 PTQ could not be built and the QAT model could not be measured", acc, held, failures
    )


def float_accuracy(model, data: Labelled, heads: tuple[Head, ...]) -> float:
    """The float Keras model's accuracy on ``data``."""
    out = predict(model, [data.x[n] for n in model.input_names], len(heads))
    return accuracy(heads, out, [data.y[h.name] for h in heads])
