"""Subprocess entry: ``python -m edge_tool.evaluate.latency_worker REQUEST_JSON`` prints one JSON line; with ``-``
instead of the request it imports LiteRT first, then reads the request from stdin (a worker started ahead).

Runs only the LiteRT interpreter (no TensorFlow import), so its cold start and peak RSS are the model's own.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from edge_tool.evaluate.latency import measure_tflite, peak_rss_mb
from edge_tool.litert.runtime import interpreter_class
from edge_tool.parsers.tflite_schema import tflite_schema


def main(argv: list[str]) -> int:
    """Measure the model described by the JSON request in ``argv[0]`` (or on stdin for ``-``); print
    {"latency", "peak_rss_mb"}."""
    if argv[0] == "-":
        interpreter_class(), tflite_schema()  # the imports, before the request arrives
        line = sys.stdin.readline()
        if not line.strip():
            return 0  # closed unused
        request = json.loads(line)
    else:
        request = json.loads(argv[0])
    with np.load(request["feeds"]) as npz:
        feeds = {int(k[1:]): npz[k] for k in npz.files}
    stats = measure_tflite(
        request["model"],
        feeds,
        request["outputs"],
        request["threads"],
        request["warmup"],
        request["runs"],
        request["time_budget_s"],
    )
    print(json.dumps({"latency": {**stats.to_dict(), "samples": list(stats.samples_ms)}, "peak_rss_mb": peak_rss_mb()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
