"""The ``tflm`` runtime (``eval --runtime tflm``): a .tflite artefact run by TFLite Micro's interpreter (in a child
process).

The artefact's minimum tensor arena is measured first (``edge_tool.micro.tflm``) and the evaluation then runs
with exactly that arena, so every sample passing is also a check of the measurement. Inputs are prepared and
outputs dequantized with the same code as the LiteRT rows (``TfliteInterpreter``), so the drift columns compare.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import ModelError, RuntimeFailure
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.latency import summarize
from edge_tool.evaluate.rows import ArtifactResult, ReferenceResult
from edge_tool.evaluate.runners import SessionRunner
from edge_tool.evaluate.runtimes.registry import RUNTIMES, Column, RuntimeSpec
from edge_tool.litert.tflite_runner import TfliteInterpreter
from edge_tool.micro import tflm
from edge_tool.micro.tflm import tflm_version
from edge_tool.micro.worker import recv_array, send_array
from edge_tool.models.formats import Artifact, ArtifactFormat


class TflmSession:
    """A worker process holding one TFLM interpreter; ``run`` sends a batch, ``time`` measures the first sample."""

    def __init__(self, model_file, arena: int):
        self.model_file = model_file
        cmd = module_command("edge_tool.micro.worker", "serve", model_file, int(arena))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def _request(self, header: dict, inputs: list[np.ndarray], n_replies: int) -> list[np.ndarray]:
        try:
            self.proc.stdin.write((json.dumps(header) + "\n").encode())
            for x in inputs:
                send_array(self.proc.stdin, x)
            self.proc.stdin.flush()
            return [recv_array(self.proc.stdout) for _ in range(n_replies)]
        except (OSError, ValueError, EOFError):
            self.close()
            err = self.proc.stderr.read().decode(errors="replace").strip().splitlines()[-4:]
            raise RuntimeFailure(
                f"TFLM failed on {self.model_file} (exit {self.proc.returncode}): {' '.join(err) or 'no message'}"
            ) from None

    def run(self, inputs: list[np.ndarray], n_outputs: int) -> list[np.ndarray]:
        """Raw outputs of every sample of ``inputs`` (one array per model input, batch first), batch 1 each."""
        return self._request({"cmd": "run", "n": len(inputs[0])}, inputs, n_outputs)

    def time(self, inputs: list[np.ndarray], warmup: int, runs: int | None, budget: float | None) -> np.ndarray:
        """Per-call nanoseconds of set_input + invoke + get_output on the first sample."""
        header = {"cmd": "time", "warmup": warmup, "runs": runs, "time_budget_s": budget}
        return self._request(header, [x[:1] for x in inputs], 1)[0]

    def close(self, abort: bool = False) -> None:
        """Stop the worker (kill it at once when ``abort``: an error or a stop signal is unwinding)."""
        if abort and self.proc.poll() is None:
            self.proc.kill()
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class TflmRunner(SessionRunner):
    """A .tflite artefact during the eval pass, run by TFLM; the runner interface of ``evaluate.runners``."""

    reads_files = False

    def __init__(self, art: Artifact, config: EvalConfig, scratch, slot: int, threads: int = 1):

        tflm.require_tflm()
        self.art = art
        self.failed: str | None = None
        self.model = TfliteInterpreter(art.model_file)  # bindings, input quantization and dequantization only
        refused, _ = tflm.unsupported_ops(art.model_file)
        if refused:
            raise ModelError(
                f"TFLite Micro cannot run {art.model_file}: " + "; ".join(f"{op} ({why})" for op, why in refused)
            )
        self.arena = tflm.measure_arena(art.model_file)
        self.session = TflmSession(art.model_file, self.arena.minimum_bytes)
        self.in_order = [d["index"] for d in self.model.interp.get_input_details()]
        self.out_order = [d["index"] for d in self.model.interp.get_output_details()]
        self.first: list[np.ndarray] | None = None
        self._out: dict[str, np.ndarray] | None = None

    def submit(self, files: dict, inputs: dict, out_names: tuple[str, ...], ref_names: list[str]) -> None:
        """Run one batch through TFLM (sample by sample, in the worker) and keep the matching outputs."""
        if self.failed:
            return
        feeds = self.model.prepare(inputs)
        ordered = [feeds[idx] for idx in self.in_order]
        if self.first is None:
            self.first = [x[:1].copy() for x in ordered]
        try:
            raw = dict(zip(self.out_order, self.session.run(ordered, len(self.out_order))))
        except RuntimeFailure as exc:
            self.failed = f"does not run in TFLM: {exc}"
            return
        bindings = {n: self.model.output_for(n, ref_names.index(n)) for n in out_names}
        self._out = {n: self.model.dequantize(b, raw[b.index]) for n, b in bindings.items()}

    def collect(self) -> dict[str, np.ndarray] | None:
        """The dequantized outputs (by reference name) of the batch submitted last; None once TFLM has failed."""
        out, self._out = (None if self.failed else self._out), None
        return out

    def result(self, label: str, config: EvalConfig, reference: ReferenceResult, fields: dict) -> ArtifactResult:
        """Host latency of TFLM's reference kernels and the row, with arena and flash instead of RSS."""

        def measure():
            return summarize(
                self.session.time(self.first, config.warmup, config.effective_runs, config.time_budget_s), None
            )

        lat = self._session_latency(config, measure, "does not run in TFLM")
        return self._row(
            label,
            reference,
            "tflite",
            fields,
            latency=lat,
            peak_rss_mb=None,
            threads=1,
            runtime=f"tflite-micro {tflm_version()}",
            latency_note="TFLM reference kernels on this host, not a microcontroller figure",
            arena=self.arena.to_dict(),
            flash_bytes=self.art.size_bytes,
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
