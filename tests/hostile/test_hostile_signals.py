"""How a run ends: SIGTERM / SIGHUP / SIGINT mid-run clean up like Ctrl-C (exit 143 / 129 / 130), and an internal
error is one line with exit 70 (the traceback only with EDGETOOL_DEBUG=1).

The signal cases run edgetool for real in a fresh process with a private TMPDIR, wait until it is mid-run (its
temp dir or child process exists), send the signal and then check: the exit code, one "stopped" line, no
traceback, no child process still alive, and the case dir and TMPDIR exactly as before the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from edge_tool.core import signals
from tests.hostile.core_fixtures import case_root, flat_artifacts  # noqa: F401 (fixtures)
from tests.hostile.harness import REPO, snapshot
from tests.test_serve import SITE_FILES

WAIT_S = 600  # upper bound for reaching the mid-run point on a loaded machine (not a timing assert)


def _start(args: list[str], root: Path, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
    tmpdir = root.parent / f"{root.name}-tmp"
    tmpdir.mkdir(exist_ok=True)
    full_env = {**os.environ, "TMPDIR": str(tmpdir), "EDGETOOL_DEBUG": "1", "COLUMNS": "200", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", *[a.format(root=root) for a in args]],
        cwd=root,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, tmpdir


def _wait_for(proc: subprocess.Popen, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(
                f"edgetool ended (exit {proc.returncode}) before the mid-run point:\n{out[-1500:]}{err[-3000:]}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("edgetool never reached the mid-run point")
        time.sleep(0.05)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(procs: list[psutil.Process]) -> list[int]:
    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def run_signalled(
    args: list[str],
    root: Path,
    ready: Callable[[Path, Path], bool],
    sig: int,
    env: dict | None = None,
    children: bool = False,
) -> str:
    """Run edgetool ARGS in ``root``, send ``sig`` once ``ready(root, tmpdir)``; assert the cleanup contract."""
    tmpdir = root.parent / f"{root.name}-tmp"
    tmpdir.mkdir(exist_ok=True)
    before = snapshot(root, tmpdir)
    proc, tmpdir = _start(args, root, env)
    try:
        _wait_for(proc, lambda: ready(root, tmpdir) and (not children or _descendants(proc.pid)))
        kids = _descendants(proc.pid)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out + err
    assert proc.returncode == 128 + sig, f"exit {proc.returncode}\n{text[-4000:]}"
    assert f"stopped: {signal.Signals(sig).name} received" in err, text[-3000:]
    assert "Traceback" not in text, text[-4000:]
    # a child edgetool SIGKILLed on its way out may take a moment to die (a Node process unmapping its wasm heap
    # on a loaded 2-core CI machine was still there 0.2 s later): it must be gone within 5 s, never left running
    deadline = time.monotonic() + 5
    while _alive(kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(kids), f"child processes left running: {_alive(kids)}"
    after = snapshot(root, tmpdir)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"left behind or changed: {changed[:20]}"
    return text


CONVERT_ALL = [
    "convert",
    "{root}/model",
    "--format",
    "all",
    "--quant",
    "fp32,fp16,dynamic,int8,int16x8",
    "--calibration",
    "{root}/model/eval.npz",
    "-o",
    "{root}/out",
]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_convert_stopped_mid_run_leaves_nothing(case_root, sig):
    """The signal arrives while the atomic output dir (.out.tmp-*) and edgetool-src-* exist."""
    run_signalled(CONVERT_ALL, case_root, lambda root, tmp: any(root.glob(".out.tmp-*")), sig)
    assert not (case_root / "out").exists()


@pytest.mark.slow
def test_convert_stopped_while_the_tfjs_worker_process_runs(case_root):
    """The parallel TFJS export process (forced on) is ended too."""
    run_signalled(
        CONVERT_ALL,
        case_root,
        lambda root, tmp: any(root.glob(".out.tmp-*")),
        signal.SIGTERM,
        env={"EDGETOOL_CONVERT_WORKERS": "1"},
        children=True,
    )


@pytest.mark.slow
def test_eval_stopped_during_the_latency_worker(case_root):
    """SIGTERM while the LiteRT latency worker process runs (edgetool-lat-*/feeds.npz in TMPDIR)."""
    # the reference is timed first (in this process), then the artefact in its worker: 20 s each at most
    args = [
        "eval",
        "{root}/flat.tflite",
        "-r",
        "{root}/model",
        "-d",
        "{root}/model/eval.npz",
        "--time-budget",
        "20",
        "--json",
        "{root}/r.json",
    ]
    run_signalled(
        args,
        case_root,
        lambda root, tmp: any(tmp.glob("edgetool-run-*/edgetool-lat-*/feeds.npz")),
        signal.SIGTERM,
        children=True,
    )
    assert not (case_root / "r.json").exists()


def test_a_stop_signal_inside_an_import_is_delivered_again_after_it():
    """A signal handled while the import machinery runs (a compiled extension importing from C turns the exception
    into a SystemError, or loses it; CI once saw such an eval run to exit 0) is not raised there, but delivered
    again 50 ms later, where it stops the run as any other."""
    space = {"signal": signal, "sys": sys}
    code = "def inside(handler):\n    handler(signal.SIGTERM, sys._getframe())\n"
    exec(compile(code, "<frozen importlib._bootstrap>", "exec"), space)
    returned, deadline = False, time.monotonic() + 5
    with signals.stop_like_interrupt(), pytest.raises(signals.Terminated) as stopped:
        space["inside"](signals._raise_terminated)
        returned = True  # nothing was raised inside the import
        while time.monotonic() < deadline:
            time.sleep(0.01)
    assert returned
    assert stopped.value.signum == signal.SIGTERM
    assert time.monotonic() < deadline  # delivered again, well before the 5 s


def test_a_stop_compiled_code_swallowed_is_raised_again_where_its_error_is_handled():
    """pybind11 can replace a Terminated raised inside a Python callback by its own RuntimeError (CI saw the
    converter's "MISMATCH ... REPLACED BY Terminated" turn a stopped convert into a failed mode and exit 1): the
    handler of that error raises the stop again; outside a stop nothing is raised."""
    with signals.stop_like_interrupt():
        try:
            signals._raise_terminated(signal.SIGTERM, sys._getframe())
        except signals.Terminated:
            pass  # what the compiled code did with it
        with pytest.raises(signals.Terminated) as stopped:
            signals.raise_if_stopping()
    assert stopped.value.signum == signal.SIGTERM
    signals.raise_if_stopping()  # the block is over: no stop pending


@pytest.mark.slow
def test_eval_stopped_during_the_tfjs_node_session(case_root):
    """SIGHUP while the TFJS Node process times its latency loop (edgetool-tfjs-* in TMPDIR)."""
    args = ["eval", "{root}/tfjs", "-r", "{root}/model", "-d", "{root}/model/eval.npz", "--time-budget", "20"]
    run_signalled(
        args, case_root, lambda root, tmp: any(tmp.glob("edgetool-run-*/edgetool-tfjs-*")), signal.SIGHUP, children=True
    )


@pytest.mark.slow
def test_multiworker_training_stopped_ends_its_workers(case_root):
    """SIGTERM while two local MultiWorkerMirroredStrategy worker processes train."""
    args = ["train", "--strategy", "multiworker", "--workers", "2", "--epochs", "200", "-o", "{root}/m"]
    run_signalled(
        args,
        case_root,
        lambda root, tmp: any(root.glob(".m.tmp-*")) and any(tmp.rglob("edgetool-mw-*")),
        signal.SIGTERM,
        children=True,
    )
    assert not (case_root / "m").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_serve_stopped_by_signal(tmp_path, sig):
    """serve closes its socket and exits 128 + signal (the listening line printed first is the mid-run point)."""
    site = tmp_path / "site"
    for rel, data in SITE_FILES.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(data)
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", "serve", str(site), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving" in proc.stdout.readline()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert f"stopped: {signal.Signals(sig).name} received" in err and "Traceback" not in err


# ------------------------------------------------------------------ internal errors

_BROKEN_COMMAND = """
from edge_tool import cli
def boom():
    raise RuntimeError("kaboom [red]x[/red]\\nsecond line")
cli.app.command("boom")(cli.guard_command(boom))
cli.app()
"""


@pytest.mark.parametrize("debug", ["", "0", "1"])
def test_internal_error_is_one_line_exit_70_unless_debugging(tmp_path, debug):
    env = {**os.environ, "EDGETOOL_DEBUG": debug}
    proc = subprocess.run(
        [sys.executable, "-c", _BROKEN_COMMAND, "boom"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    if debug == "1":
        assert proc.returncode not in (0, 2, 70)
        assert "Traceback (most recent call last)" in proc.stderr and "kaboom" in proc.stderr
        return
    assert proc.returncode == 70, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "internal error in edgetool" in lines[0] and "EDGETOOL_DEBUG=1" in lines[0]
    assert "RuntimeError: kaboom [red]x[/red]" in lines[0]  # verbatim, first line only
    assert "Traceback" not in proc.stderr


_PIPE_COMMAND = """
import sys
from edge_tool import cli
def dump():
    for i in range(200000):
        print("line", i)
cli.app.command("dump")(cli.guard_command(dump))
cli.app()
"""


def test_reader_leaving_the_pipe_is_exit_141_without_noise():
    """`edgetool … | head -1`: the writer stops quietly (no BrokenPipeError traceback, no internal error)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _PIPE_COMMAND, "dump"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "EDGETOOL_DEBUG": "1"},
    )
    assert proc.stdout.readline() == b"line 0\n"
    proc.stdout.close()  # the reader goes away
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "internal error" not in err, err
