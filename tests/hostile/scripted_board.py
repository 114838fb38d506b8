"""A scripted board for ``test_hostile_device.py``: started as the ``?python=`` of a host-as-a-device sshd
(``scripted_board.py CASE -c BOOTSTRAP``), it reads edgetool's runner program from stdin as the real bootstrap does,
defines it, and runs it with one answer replaced by the hostile one CASE names (a real runner, a real sshd: only
that answer is forged)."""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time

CASE = sys.argv[1]


def frame(header: dict) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">I", len(raw)) + raw


def hostile(header: dict, arrays: dict | None):
    """(header, arrays, raw bytes to send instead or None) for CASE."""
    kind = next((k for k in ("hello", "probed", "ready", "latency", "ok") if k in header), None)
    raw = None
    if kind == "hello":
        if CASE == "hello-types":
            header["cores"], header["python"] = "many", 3
        elif CASE == "hello-missing":
            del header["machine"]
        elif CASE == "cpu-12mb":
            header["cpu"] = "\x1b[2J" + "x" * 12_000_000
        elif CASE == "never-hello":
            time.sleep(3600)
        elif CASE == "slower-hello":  # 2 s the first time, 6 s every later runner (a board on a loaded machine)
            seen = os.path.join(os.environ["TMPDIR"], "hellos")
            time.sleep(6 if os.path.exists(seen) else 2)
            open(seen, "a").close()
        elif CASE == "stderr-flood":
            chunk = b"E" * (1 << 20)
            for _ in range(100):
                os.write(2, chunk)
            os._exit(1)
    elif kind == "ready" and CASE == "blob-4gb":
        raw = frame({"ready": True, "blob": 4 << 30})
    elif kind == "ready" and CASE == "huge-failure":
        header = {"failed": "\x1b]0;pwned\x07" + "F" * 8_000_000}
    elif kind == "ok" and CASE == "string-dtype":
        arrays = {k: v.astype("U8") for k, v in arrays.items()}
    elif kind == "ok" and CASE == "wrong-shape":
        arrays = {k: v[:, :2] for k, v in arrays.items()}
    elif kind == "ok" and CASE == "array-8tb":
        raw = frame({"ok": True, "batching": "x", "arrays": [{"name": "y0", "dtype": "<f8", "shape": [1 << 20] * 2}]})
    elif kind == "latency":
        if CASE == "empty-latency":
            header["times_ns"] = []
        elif CASE == "nan-latency":
            header["cold_start_ms"], header["times_ns"][0] = float("nan"), float("inf")
        elif CASE == "negative-latency":
            header["times_ns"][0] = -5
        elif CASE == "slow-latency":
            time.sleep(4)
    elif kind == "probed" and CASE == "ansi-probe":
        header = {"probed": True, "ok": False, "error": "\x1b[2J\x1b]0;pwned\x07<script>alert(1)</script>"}
    return header, arrays, raw


def main() -> None:
    n = int(sys.stdin.buffer.readline())
    source = sys.stdin.buffer.read(n).decode()
    tail = (
        "_code = main()"  # the runner program ends by calling main() (runner_program.runner_source): define, do not run
    )
    assert tail in source, "the runner program no longer ends with " + tail
    program = source.rsplit(tail, 1)[0]
    space = {"__name__": "edgetool-device-runner"}
    exec(compile(program, "edgetool-device-runner", "exec"), space)
    real = space["write_frame"]

    def write_frame(out, header, arrays=None):
        header, arrays, raw = hostile(dict(header), arrays)
        if raw is not None:
            out.write(raw)
            out.flush()
            return
        real(out, header, arrays)

    space["write_frame"] = write_frame
    if CASE == "segv":
        real_probe = space["probe_zeros"]

        def crash(cls, path):
            os.kill(os.getpid(), signal.SIGSEGV)
            return real_probe(cls, path)

        space["probe_zeros"] = crash
    sys.exit(space["main"]())


if __name__ == "__main__":
    main()
