"""Child process around TFLM's Python interpreter: ``python -m edge_tool.micro.worker MODE MODEL ARENA``.

``probe``: allocate with an ARENA-byte tensor arena, invoke once on zeros, print one JSON line
(``{"ok": true}``) and the allocations TFLM recorded (on stderr). Exit 3 when TFLM refuses (its log on stderr).
``serve``: allocate once, then answer requests on stdin/stdout: a JSON header line
(``{"cmd": "run", "n": N}`` followed by one ``.npy`` array per input, or ``{"cmd": "time", ...}``);
replies are ``.npy`` arrays. Only numpy and tflite_micro are imported here (no TensorFlow).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

REFUSED = 3


def send_array(stream, x: np.ndarray) -> None:
    """Write ``x`` as a JSON header line (dtype, shape) then its raw bytes (np.save needs a seekable file)."""
    x = np.ascontiguousarray(x)
    stream.write((json.dumps({"dtype": x.dtype.str, "shape": list(x.shape)}) + "\n").encode())
    stream.write(x.tobytes())


def recv_array(stream) -> np.ndarray:
    """Read one array written by ``send_array``; EOFError if the stream ends."""
    line = stream.readline()
    if not line:
        raise EOFError("stream closed")
    head = json.loads(line)
    dtype, shape = np.dtype(head["dtype"]), tuple(int(s) for s in head["shape"])
    size = dtype.itemsize * int(np.prod(shape))
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("stream closed mid-array")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _interpreter(model: bytes, arena: int):
    from tflite_micro.python.tflite_micro import runtime

    return runtime.Interpreter.from_bytes(model, arena_size=arena)


def _n_tensors(it, details) -> int:
    n = 0
    while True:
        try:
            details(n)
        except (ValueError, IndexError, RuntimeError):
            return n
        n += 1


def _probe(model: bytes, arena: int) -> int:
    try:
        it = _interpreter(model, arena)
        for i in range(_n_tensors(it, it.get_input_details)):
            d = it.get_input_details(i)
            it.set_input(np.zeros(d["shape"], d["dtype"]), i)
        it.invoke()
    except (RuntimeError, ValueError) as exc:
        sys.stderr.write(f"\nedgetool: {exc}\n")
        return REFUSED
    sys.stderr.flush()
    it.print_allocations()
    print(json.dumps({"ok": True}), flush=True)
    return 0


def _serve(model: bytes, arena: int) -> int:
    it = _interpreter(model, arena)
    n_in = _n_tensors(it, it.get_input_details)
    n_out = _n_tensors(it, it.get_output_details)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        req = json.loads(line)
        inputs = [recv_array(stdin) for _ in range(n_in)]
        if req["cmd"] == "run":
            outs = [[] for _ in range(n_out)]
            for s in range(req["n"]):
                for i, x in enumerate(inputs):
                    it.set_input(x[s : s + 1], i)
                it.invoke()
                for o in range(n_out):
                    outs[o].append(np.array(it.get_output(o)))
            for o in outs:
                send_array(stdout, np.concatenate(o))
        else:  # "time": batch-1 set_input + invoke + get_output on the first sample

            def step(inputs=inputs):
                for i, x in enumerate(inputs):
                    it.set_input(x[:1], i)
                it.invoke()
                return [it.get_output(o) for o in range(n_out)]

            times = _time(step, req["warmup"], req.get("runs"), req.get("time_budget_s"))
            send_array(stdout, np.asarray(times, dtype=np.int64))
        stdout.flush()
    return 0


def _time(step, warmup: int, runs: int | None, budget: float | None) -> list[int]:
    for _ in range(warmup):
        step()
    times, clock = [], time.perf_counter_ns
    deadline = clock() + int((budget or 0) * 1e9)
    while (len(times) < runs) if runs is not None else (not times or clock() < deadline):
        t0 = clock()
        step()
        times.append(clock() - t0)
    return times


def main(argv: list[str]) -> int:
    """Entry point: MODE (probe|serve), MODEL path, ARENA bytes."""
    mode, path, arena = argv[0], argv[1], int(argv[2])
    with open(path, "rb") as f:
        model = f.read()
    return _probe(model, arena) if mode == "probe" else _serve(model, arena)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
