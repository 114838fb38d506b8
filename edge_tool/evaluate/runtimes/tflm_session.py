"""TFLM on this host: a worker process holding one TFLM interpreter (``micro.worker serve``), and the executor the
``tflm`` runtime's rows run through here (``LocalTflm``: the local place, beside a board's ``device.board.BoardRun``).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import RuntimeFailure
from edge_tool.micro.worker import recv_array, send_array


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


class LocalTflm:
    """The ``tflm`` rows' executor on this host: ``TflmSession`` fed prepared feeds in TFLM's tensor order."""

    depth = 1
    remote = False
    batching = ""

    def __init__(self, model_file, arena: int, inputs: list[int], outputs: list[int]):
        self.inputs, self.outputs = inputs, outputs
        self.session = TflmSession(model_file, arena)
        self._out: list | None = None

    def ready(self) -> dict:
        """Nothing to wait for: the worker loads the model as it starts."""
        return {}

    def submit(self, feeds: dict, outputs: list) -> None:
        """Run the batch now (sample by sample, in the worker) and keep the outputs ``outputs`` (bindings)."""
        raw = dict(zip(self.outputs, self.session.run([feeds[i] for i in self.inputs], len(self.outputs))))
        self._out = [raw[b.index] for b in outputs]

    def collect(self) -> list:
        """The outputs of the batch submitted last."""
        out, self._out = self._out, None
        return out

    def latency(self, first: dict, outputs: list[int], timing: dict) -> dict:
        """Per-call nanoseconds of set_input + invoke + get_output on the first sample, in the pass's worker."""
        ordered = [first[i] for i in self.inputs]
        times = self.session.time(ordered, timing["warmup"], timing["runs"], timing["time_budget_s"])
        return {"times_ns": times}

    def note(self) -> str:
        """Where its latency is measured."""
        return "on this host, not a microcontroller figure"

    def end_pass(self) -> None:
        """Keep the worker: the latency loop runs in it."""

    def fail(self) -> None:
        """Stop the worker at once."""
        self.session.close(abort=True)

    def close(self, abort: bool = False) -> None:
        """Stop the worker (idempotent)."""
        self.session.close(abort)
