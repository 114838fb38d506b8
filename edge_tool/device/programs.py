"""The runtimes a board's runner offers, as the host sees them: LiteRT (``board_model``: the board's ai-edge-litert,
tflite-runtime or tf.lite) and TFLite Micro (``board_tflm``). A runtime's eval rows (``evaluate/runtimes``) and
``check --device`` name one of these to run there; ``probe_model`` is check's load + allocate + invoke on a board.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.device import answers
from edge_tool.device.board import BoardProgram
from edge_tool.device.facts import missing_runtime, missing_tflm, runtime_usable
from edge_tool.device.session import RunnerSession, model_bytes, sweep
from edge_tool.device.transport import SshDevice
from edge_tool.device.url import DeviceURL
from edge_tool.errors import RuntimeFailure

LITERT = BoardProgram(
    name="",  # the runner's default program
    missing=lambda hello, python: None if runtime_usable(hello) else missing_runtime(hello, python),
)
TFLM = BoardProgram(
    name="tflm",
    missing=lambda hello, python: None if hello.get("tflm") is not None else missing_tflm(hello, python),
    ready=lambda header: answers.ready(header, tflm=True),  # the arena it ran with, no bindings
    facts=lambda hello: {**hello, "runtime": "tflite_micro", "runtime_version": hello.get("tflm")},
    batched=False,  # one sample per invoke
)


def probe_model(url: DeviceURL, path: Path, program: BoardProgram, request: dict) -> tuple[dict, dict]:
    """(the board's hello, its probe answer) for ``path`` under ``program``; a runner that died on the model (a
    runtime crash, the OOM killer) is the verdict, its temp dir swept; RuntimeFailure (exit 2) when the board
    cannot be asked."""
    device = SshDevice(url)
    try:
        device.open()
        session = RunnerSession(device)
        try:
            hello = session.hello[0]
            why = program.missing(hello, url.python)
            if why:
                raise RuntimeFailure(f"{url.name} cannot run this check: {why}")
            session.send({"op": "load", "mode": "probe"}, blob=model_bytes(path))
            runtime = {"runtime": program.name} if program.name else {}
            session.send({"op": "probe", **runtime, **request})
            try:
                return hello, session.receive(answers.probed, activity=f"check of {path.name} on {url.name}")
            except RuntimeFailure as exc:
                if not (session.died and device.alive):
                    raise
                session.close(abort=True)
                sweep(device, session)
                return hello, {"ok": False, "error": str(exc)}
        finally:
            session.close()
    finally:
        device.close()
