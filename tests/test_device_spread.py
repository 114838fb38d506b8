"""The spread between a device row and its host row (device/spread.py) on hand-made outputs, expected
figures worked out by hand; the end-to-end figures against real boards are in test_device_fleet.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from edge_tool.device.spread import Spread, describe, fold_batch, pair_rows


def test_spread_counts_rows_steps_and_top1_by_hand():
    step = 1 / 256
    host = np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    dev = host.copy()
    dev[1, 1] -= 3 * step  # 3 steps on one value, same top-1
    dev[2] = [0.4, 0.3, 0.3]  # a different top-1: 0.1 = 25.6 steps on two values
    s = Spread(0, step)
    s.fold(host[:2], dev[:2])  # two batches, as the pass folds them
    s.fold(host[2:], dev[2:])
    rec = s.record(["model.tflite"])
    assert rec["against"] == "model.tflite" and rec["samples"] == 3 and rec["samples_differing"] == 2
    assert rec["top1_disagreements"] == 1
    assert abs(rec["max_abs_diff"] - 0.1) < 1e-12
    assert abs(rec["mean_abs_diff"] - (3 * step + 0.1 + 0.1) / 9) < 1e-12
    assert rec["max_steps"] == 26
    assert "2 of 3 samples" in describe(rec) and "up to 26 quantization steps" in describe(rec)


def test_identical_outputs_and_float_outputs():
    s = Spread(0, None)
    y = np.arange(6.0).reshape(2, 3)
    s.fold(y, y)
    rec = s.record(["a"])
    assert rec["samples_differing"] == 0 and rec["max_abs_diff"] == 0 and rec["max_steps"] is None
    assert describe(rec) == "outputs identical to the host row a on all 2 samples"


def test_device_rows_pair_with_the_host_row_of_their_artefact():
    """Runner order host a, host b, a on device 1, b on device 1, a on device 2; a failed batch (None) is skipped."""
    a, b = object(), object()
    binding = SimpleNamespace(name="p", dtype=np.dtype("int8"), scale=0.5, quantized=True)
    dev = SimpleNamespace(bindings=SimpleNamespace(outputs=[binding]))
    runners = [
        SimpleNamespace(art=a),
        SimpleNamespace(art=b),
        SimpleNamespace(art=a, board=dev, bindings=dev.bindings),
        SimpleNamespace(art=b, board=dev, bindings=dev.bindings),
        SimpleNamespace(art=a, board=dev, bindings=dev.bindings),
    ]
    assert pair_rows(runners) == {2: 0, 3: 1, 4: 0}
    y = np.zeros((2, 2))
    outs = [{"p": y}, {"p": y}, {"p": y + 1.0}, None, {"p": y}]
    spreads: dict = {}
    fold_batch(spreads, runners, outs, "p")
    assert sorted(spreads) == [2, 4] and spreads[2].record(["x"] * 5)["max_steps"] == 2
