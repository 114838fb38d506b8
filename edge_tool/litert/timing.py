"""The timed unit of work and its loop, shared by every latency figure: the host's LiteRT and ONNX Runtime loops, the
reference's, and the device runner (``device.runner_program.runner_source`` sends these very functions to the board, so the
device times exactly the loop the host times: they use only the standard library and the interpreter passed in).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def time_loop(step: Callable[[], object], warmup: int, runs: int | None, time_budget_s: float | None) -> list[int]:
    """Call ``step`` ``warmup`` times untimed, then time each call with perf_counter_ns.

    With ``runs`` it times exactly that many calls; with ``time_budget_s`` it times calls until the budget is
    spent (at least one). Returns the per-call durations in nanoseconds.
    """
    for _ in range(warmup):
        step()
    times: list[int] = []
    clock = time.perf_counter_ns
    if runs is not None:
        for _ in range(runs):
            t0 = clock()
            step()
            times.append(clock() - t0)
        return times
    deadline = clock() + int(time_budget_s * 1e9)
    while True:
        t0 = clock()
        step()
        t1 = clock()
        times.append(t1 - t0)
        if t1 >= deadline:
            return times


def tflite_step(
    interp, feeds: dict[int, np.ndarray], output_indices: list[int], reset_state: bool = False
) -> Callable[[], list]:
    """The one timed unit of work: set every input tensor, invoke, read every output tensor.

    With ``reset_state`` (a model with recurrent state) the variable tensors are reset first, as an app must
    before each independent sample; that reset is part of the timed work.
    """
    set_tensor, invoke, get_tensor = interp.set_tensor, interp.invoke, interp.get_tensor
    items = list(feeds.items())

    if reset_state:
        reset = interp.reset_all_variables

        def step() -> list:
            reset()
            for index, value in items:
                set_tensor(index, value)
            invoke()
            return [get_tensor(i) for i in output_indices]

        return step

    def step() -> list:
        for index, value in items:
            set_tensor(index, value)
        invoke()
        return [get_tensor(i) for i in output_indices]

    return step


def fit_inputs(interp, feeds: dict[int, np.ndarray]) -> None:
    """Resize inputs to the feeds' shapes where they differ (dynamic height/width, batch), then allocate."""
    current = {d["index"]: tuple(d["shape"]) for d in interp.get_input_details()}
    changed = {i: x.shape for i, x in feeds.items() if current.get(i) != x.shape}
    for i, shape in changed.items():
        interp.resize_tensor_input(i, list(shape))
    interp.allocate_tensors()
