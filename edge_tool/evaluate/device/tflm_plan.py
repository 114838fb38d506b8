"""The host side of ``eval --device URL --runtime tflm``: the arena measured here with the host's TFLM (sent to the
device, which grows it only if its own TFLM needs more), the bindings and (de)quantization from the host's LiteRT
reading of the file, exactly as the host's ``--runtime tflm`` row (``evaluate.tflm_runner``)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.micro import tflm


class TflmPlan:
    """One .tflite for TFLM on a device: what the runner is told, and the row's arena record."""

    def __init__(self, model_file: Path):
        self.model_file = Path(model_file)
        self.arena: tflm.ArenaSize | None = None
        self.used: int | None = None
        self.bindings: TfliteInterpreter | None = None

    def load(self) -> dict:
        """The device's ``load`` request (the arena measured here first; ModelError for ops TFLM lacks)."""
        tflm.require_tflm()
        if self.arena is None:
            refused, _ = tflm.unsupported_ops(self.model_file)
            if refused:
                raise ModelError(
                    "TFLite Micro cannot run this model: " + "; ".join(f"{op} ({why})" for op, why in refused)
                )
            self.arena = tflm.measure_arena(self.model_file)
            self.bindings = TfliteInterpreter(self.model_file)
        return {"op": "load", "runtime": "tflm", **self.latency()}

    def latency(self) -> dict:
        """What the device's TFLM needs besides the model: arena and tensor indices in TFLM's order."""
        interp = self.bindings.interp
        return {
            "runtime": "tflm",
            "arena": self.arena.minimum_bytes,
            "inputs": [d["index"] for d in interp.get_input_details()],
            "tensor_outputs": [d["index"] for d in interp.get_output_details()],
        }

    def host(self, ready: dict) -> TfliteInterpreter:
        """The bindings the host prepares feeds and dequantizes outputs with, once the device is ready."""
        self.used = int(ready.get("arena") or self.arena.minimum_bytes)
        return self.bindings

    def arena_record(self) -> dict | None:
        """The row's ``arena``: the host-measured minimum (the device's own use in the note when larger)."""
        return self.arena.to_dict() if self.arena else None

    def note(self) -> str:
        """Which arena the device ran with."""
        if self.arena is None:
            return "arena not measured"
        if self.used and self.used > self.arena.minimum_bytes:
            return f"the device's TFLM needed {self.used} bytes of arena (the host measured {self.arena.minimum_bytes})"
        return f"the device ran with the host-measured minimum arena of {self.arena.minimum_bytes} bytes"

    def facts(self, hello: dict) -> dict:
        """The device record's runtime fields for a TFLM row."""
        return {**hello, "runtime": "tflite_micro", "runtime_version": hello.get("tflm")}
