"""The model zoo benchmark: every (model × cell) through the real edgetool CLI, checked independently → ZOO.md.

Cells: fp32, fp16, dynamic, int8, int16x8, qat, tfjs, auto, eval, demo (what each checks: docs/zoo.md).
Resumable: built models and cell results are cached under benchmarks/.cache/zoo/ and reused while edgetool's
source and the zoo's code are unchanged; an interrupted run picks up where it stopped.

Usage: .venv/bin/python benchmarks/zoo.py [--models a,b] [--cells fp32,int8] [--jobs 2] [--no-browser]
                                          [--fresh] [--output benchmarks/ZOO.md]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.zoo import cells as zcells
from benchmarks.zoo import models as zmodels
from benchmarks.zoo import report as zreport
from benchmarks.zoo import runner as zrunner
from benchmarks.zoo import store as zstore

_lock = threading.Lock()


def log(message: str) -> None:
    """One progress line (thread-safe)."""
    with _lock:
        print(time.strftime("%H:%M:%S"), message, flush=True)


def _subset(text: str | None, allowed, what: str) -> list[str]:
    if not text:
        return list(allowed)
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return chosen


def _git() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=zrunner.REPO)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "edge_tool", "calibration", "web_demo"],
        capture_output=True,
        text=True,
        cwd=zrunner.REPO,
    ).stdout.strip()
    return proc.stdout.strip() + ("+changes" if dirty else "")


def collect(key: str) -> dict:
    """Every cached result valid for ``key`` (all models and cells, not only this run's); results of an older
    edgetool source are included with their ``source`` hash, which the report shows."""
    return {(m, c): r for m in zmodels.SPECS for c in zcells.CELLS if (r := zstore.load_any_source(m, c, key))}


def write_report(path: Path, key: str, features) -> dict:
    """(Re)write ZOO.md from the cache; return the results shown."""
    results = collect(key)
    accuracy = {}
    for m in zmodels.SPECS:
        info = zstore.CACHE / "models" / m / "zoo.json"
        if info.is_file():
            import json  # noqa: PLC0415

            accuracy[m] = json.loads(info.read_text()).get("eval_accuracy")
    meta = {
        "tool_hash": key.split(":")[0],
        "git": _git(),
        "machine": zreport.machine(),
        "accuracy": accuracy,
        "features": ", ".join(f"{k}={v}" for k, v in vars(features).items()),
        "seconds": sum(r.get("seconds") or 0 for r in results.values()),
        "not_run": [m for m in zmodels.SPECS if not any((m, c) in results for c in zcells.CELLS)],
    }
    zreport.write(path, results, meta)
    return results


def main() -> None:
    """Parse options, run the requested models (``--jobs`` at a time) and write ZOO.md after each model."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma list (default: all): " + ",".join(zmodels.SPECS))
    ap.add_argument("--cells", help="comma list (default: all): " + ",".join(zcells.CELLS))
    ap.add_argument("--jobs", type=int, default=2, help="models run in parallel (default 2)")
    ap.add_argument("--no-browser", action="store_true", help="demo cell: check the site's files only, not predict()")
    ap.add_argument("--fresh", action="store_true", help="ignore cached cell results (built models are kept)")
    ap.add_argument("--output", type=Path, default=zrunner.REPO / "benchmarks" / "ZOO.md")
    args = ap.parse_args()
    models = _subset(args.models, list(zmodels.SPECS), "models")
    cells = _subset(args.cells, list(zcells.CELLS), "cells")
    features = zrunner.detect_features()
    key = f"{zstore.tool_hash()}:{zstore.zoo_hash()}:{features}:{'browser' if not args.no_browser else 'files'}"
    if args.fresh:
        for m in models:
            for c in cells:
                zstore.result_path(m, c).unlink(missing_ok=True)
    log(f"{len(models)} models × {len(cells)} cells; {features}")
    start = time.perf_counter()

    def one(name: str) -> None:
        try:
            zrunner.run_model(name, cells, features, key, not args.no_browser, log)
        except Exception as exc:
            log(f"[{name}] FAILED: {type(exc).__name__}: {str(exc)[:500]}")
        with _lock:
            write_report(args.output, key, features)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, models))
    results = write_report(args.output, key, features)
    log(f"{zreport.summary_line(results)}; {time.perf_counter() - start:.0f} s; wrote {args.output}")


if __name__ == "__main__":
    main()
