"""The ``tflm`` runtime (``eval --runtime tflm``): a .tflite artefact run by TFLite Micro's interpreter (in a child
process).

The artefact's minimum tensor arena is measured first (``edge_tool.micro.tflm``) and the evaluation then runs
with exactly that arena, so every sample passing is also a check of the measurement. Inputs are prepared and
outputs dequantized with the same code as the LiteRT rows (``TfliteInterpreter``), so the drift columns compare.
"""

from __future__ import annotations

from edge_tool.device.board import Board, BoardRun, start_or_fail
from edge_tool.device.programs import TFLM
from edge_tool.errors import ModelError
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.prepared import PreparedRunner
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runtimes.registry import RUNTIMES, Column, RuntimeSpec
from edge_tool.evaluate.runtimes.tflm_session import LocalTflm
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.micro import tflm
from edge_tool.micro.tflm import tflm_version
from edge_tool.models.readers import Artifact, ArtifactFormat


class TflmRunner(PreparedRunner):
    """A .tflite artefact in TFLM's interpreter, here (``LocalTflm``) or on a ``--device`` board (``BoardRun``):
    the arena measured here first, feeds prepared and outputs dequantized here, one sample per invoke."""

    engine = "TFLM"

    def __init__(
        self, art: Artifact, config: EvalConfig, scratch=None, slot: int = 0, threads: int = 1, board=None, fleet=None
    ):
        tflm.require_tflm()
        refused, _ = tflm.unsupported_ops(art.model_file)
        if refused:
            raise ModelError(
                f"TFLite Micro cannot run {art.model_file}: " + "; ".join(f"{op} ({why})" for op, why in refused)
            )
        self.model = TfliteInterpreter(art.model_file)  # bindings, input quantization and dequantization only
        self.arena = tflm.measure_arena(art.model_file)
        self.used: int | None = None  # the arena a board's TFLM ran with (it may need more than ours)
        inputs = [d["index"] for d in self.model.interp.get_input_details()]
        outputs = [d["index"] for d in self.model.interp.get_output_details()]
        if board is None:
            self._begin(art, config, LocalTflm(art.model_file, self.arena.minimum_bytes, inputs, outputs))
            return
        load = {"arena": self.arena.minimum_bytes, "inputs": inputs, "tensor_outputs": outputs}
        self._begin(art, config, BoardRun(board, art.model_file, TFLM, load), fleet)
        self.failed = start_or_fail(self.executor)

    @classmethod
    def on_board(cls, art: Artifact, config: EvalConfig, board: Board, fleet) -> TflmRunner:
        """The same runner with the model on ``board`` (``eval --device URL --runtime tflm``)."""
        return cls(art, config, board=board, fleet=fleet)

    def _bindings(self, ready: dict) -> TfliteInterpreter:
        self.used = int(ready["arena"]) if ready.get("arena") else None
        return self.model

    def _timed(self, answer: dict) -> None:
        if answer.get("arena"):
            self.used = max(self.used or 0, int(answer["arena"]))

    def _arena_note(self) -> str:
        """Which arena a board ran with ("" here: exactly the measured one)."""
        if not self.executor.remote:
            return ""
        if self.used and self.used > self.arena.minimum_bytes:
            return (
                f"; the device's TFLM needed {self.used} bytes of arena (the host measured {self.arena.minimum_bytes})"
            )
        return f"; the device ran with the host-measured minimum arena of {self.arena.minimum_bytes} bytes"

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Latency of TFLM's reference kernels where it ran and the row, with arena and flash."""
        lat, rss = self.latency(config)
        version = self.executor.hello.get("tflm") if self.executor.remote else tflm_version()
        return self._row(
            label,
            reference,
            "tflite",
            fields,
            latency=lat,
            peak_rss_mb=rss,
            threads=1,
            runtime=f"tflite-micro {version}" if version else "none",
            latency_note=f"TFLM reference kernels {self.executor.note()}{self._arena_note()}",
            arena=self.arena.to_dict(),
            flash_bytes=self.art.size_bytes,
            batching="" if self.failed else self.batching,
            **self.placed(),
        )


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def _facts(results) -> list[str]:
    """One footer line per TFLM row: its arena, flash and what its latency is."""
    return [
        f"TFLM {r.artifact}: tensor arena minimum {r.arena['minimum_bytes']} bytes (recommended "
        f"{r.arena['recommended_bytes']}), flash {r.flash_bytes} bytes; latency is {r.latency_note}."
        for r in results
        if r.arena is not None
    ]


SPEC = RUNTIMES.register(
    RuntimeSpec(
        name="tflm",
        formats=(ArtifactFormat.TFLITE.value,),
        open=TflmRunner,
        on_board=TflmRunner.on_board,
        summary="TFLite Micro's interpreter (reference kernels): measured tensor arena and flash instead of RSS",
        claims=lambda r: r.arena is not None,
        result_fields=("arena", "flash_bytes"),
        facts=_facts,
        columns=(
            Column("arena", lambda r: "—" if r.arena is None else _kib(r.arena["minimum_bytes"])),
            Column("flash", lambda r: "—" if r.arena is None else _kib(r.flash_bytes)),
        ),
    )
)
