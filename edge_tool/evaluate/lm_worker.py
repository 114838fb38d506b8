"""Subprocess entry of ``eval --task lm``'s host rows: ``python -m edge_tool.evaluate.lm_worker REQUEST.json``.

One .tflite's LM run (``edge_tool.lm.measure.lm_run`` over LiteRT's signature runners, caches fed back) in a fresh
process that imports LiteRT and numpy only — the state a plain loop over the same interpreter starts in (no
TensorFlow, no reference run before it: the allocator has not been warmed by anything else), so eval's TTFT and
tokens/s are that loop's, and the process's peak RSS (VmHWM) is the runner's own, as on a board. Writes the
logits and decode mask to ``REQUEST['out']`` (.npz) and prints one JSON line with the rest.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from edge_tool.evaluate.latency import peak_rss_mb
from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.measure import lm_run
from edge_tool.lm.session import LmSession, tflite_call


def host_run(path: Path, threads: int, ids, prompts, req: dict) -> dict:
    """The LM run of one .tflite in LiteRT in this process, with load and cold-start ms."""
    t0 = time.perf_counter()
    contract = read_lm_contract(path)
    session = LmSession(tflite_call(path, threads), contract)
    loaded = time.perf_counter()
    session.decode(0)
    cold = time.perf_counter()
    raw = lm_run(session, ids, prompts, req)
    return {**raw, "load_ms": (loaded - t0) * 1e3, "cold_start_ms": (cold - t0) * 1e3}


def main(argv: list[str]) -> int:
    """Run the request in ``argv[0]``; the arrays go to its ``out``, the rest to stdout as one JSON line."""
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    raw = host_run(Path(request["model"]), request["threads"], request["ids"], request["prompts"], request["req"])
    np.savez(request["out"], logits=raw.pop("logits"), decode=raw.pop("decode"))
    print(json.dumps({**raw, "peak_rss_mb": peak_rss_mb()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
