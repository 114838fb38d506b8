"""Run (model × cell) through the real edgetool CLI, check each result independently, cache it, resume.

Layout under ``benchmarks/.cache/zoo/`` (gitignored): ``models/NAME`` (built models), ``work/NAME/CELL`` (what each
cell wrote), ``results/NAME/CELL.json`` (outcome + verdict, keyed by a hash of edgetool's source, the zoo's source
and the CLI's options, so a rerun skips what is still valid and redoes what changed).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.zoo import cells as zcells
from benchmarks.zoo import models as zmodels

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("EDGETOOL_ZOO_CACHE") or REPO / "benchmarks" / ".cache" / "zoo")
TOOL_DIRS = ("edge_tool", "calibration", "web_demo")
TOOL_SUFFIXES = (".py", ".js", ".html", ".css", ".json")
CHECK_TIMEOUT = 1800


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}


def edgetool(*args: str, timeout: float) -> tuple[int | None, str, str, float]:
    """Run ``python -m edge_tool ARGS``: (exit code or None on timeout, stdout, stderr, seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "edge_tool", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the CLI's own child processes (TFJS export, latency workers) too
        out, err = proc.communicate()
        rc = None
    return rc, out, err, time.perf_counter() - start


def detect_features() -> zcells.Features:
    """Which options this edgetool offers (other branches add --batch and --input-size)."""
    conv = edgetool("convert", "--help", timeout=120)[1]
    demo = edgetool("demo", "--help", timeout=120)[1]
    return zcells.Features(convert_batch="--batch" in conv, demo_input_size="--input-size" in demo)


def tool_hash() -> str:
    """Hash of edgetool's source (package, calibration, page template): results of older code are not reused."""
    digest = hashlib.sha256()
    for top in TOOL_DIRS:
        for f in sorted((REPO / top).rglob("*")):
            if f.suffix in TOOL_SUFFIXES and f.is_file() and not {"vendor", "node_modules"} & set(f.parts):
                digest.update(str(f.relative_to(REPO)).encode() + f.read_bytes())
    return digest.hexdigest()[:16]


CHECK_FILES = ("cells.py", "checks.py", "context.py", "oracles.py", "verdicts.py", "litert_run.py", "tfjs_check.js",
               "browser.py")


def zoo_hash() -> str:
    """Hash of the zoo code that decides a cell's result (commands, classification, checks)."""
    digest = hashlib.sha256()
    for name in CHECK_FILES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def result_path(model: str, cell: str) -> Path:
    """Where one cell's result is cached."""
    return CACHE / "results" / model / f"{cell}.json"


def load_result(model: str, cell: str, key: str) -> dict | None:
    """A cached result still valid for ``key``, else None."""
    f = result_path(model, cell)
    if not f.is_file():
        return None
    result = json.loads(f.read_text())
    return result if result.get("key") == f"{key}:{zmodels.source_hash(model)}" else None


def ensure_model(name: str, log) -> Path:
    """The built model (from the cache when its source is unchanged)."""
    out = CACHE / "models" / name
    if not zmodels.is_built(out):
        log(f"[{name}] building")
        info = zmodels.build(name, out)
        log(f"[{name}] built in {info['build_seconds']} s, held-out accuracy {info['eval_accuracy']}")
    return out


def run_model(name: str, cells: list[str], features: zcells.Features, key: str, browser: bool, log) -> dict:
    """Every requested cell of one model: CLI runs first, then one check process for everything produced."""
    spec = zmodels.SPECS[name]
    results = {c: r for c in cells if (r := load_result(name, c, key))}
    todo = [c for c in zcells.CELLS if c in cells and c not in results]
    if not todo:
        return results
    model = ensure_model(name, log)
    work = CACHE / "work" / name
    produced = {c: work / c for c in zcells.CELLS
                if c in results and results[c]["status"] in ("ok", "wrong") and (work / c).is_dir()}
    pending = {}
    for cell in todo:
        out = work / cell
        shutil.rmtree(out, ignore_errors=True)
        args = zcells.command(cell, model, out, spec, features, produced)
        if args is None:
            results[cell] = _save(name, cell, key, {"status": "blocked", "reason": "no artefact of fp32/int8/tfjs to "
                                                    "evaluate (those cells produced nothing)", "command": None})
            continue
        if cell in ("eval", "demo"):
            out.mkdir(parents=True)
        timeout = zcells.TIMEOUTS.get(cell, zcells.DEFAULT_TIMEOUT)
        rc, _, err, seconds = edgetool(*args, timeout=timeout)
        status, reason = zcells.classify(cell, rc, err, timeout)
        record = {"status": status, "reason": reason, "rc": rc, "seconds": round(seconds, 1),
                  "command": "edgetool " + " ".join(_short(a) for a in args)}
        log(f"[{name}] {cell}: {status} ({seconds:.0f} s) {reason[:120]}")
        if status == "produced":
            produced[cell] = out
            pending[cell] = record
        else:
            (out.mkdir(parents=True, exist_ok=True), (out / "stderr.txt").write_text(err))
            results[cell] = _save(name, cell, key, record)
    if pending:
        verdicts = _check(name, model, work, pending, produced, browser)
        for cell, record in pending.items():
            v = verdicts.get(cell, {"status": "unchecked", "reason": "the check process died", "metrics": {}})
            record.update(status=v["status"], reason=v["reason"], metrics=v.get("metrics", {}))
            log(f"[{name}] {cell}: checked {v['status']} {v['reason'][:120]}")
            results[cell] = _save(name, cell, key, record) if v["status"] != "unchecked" else record
    return results


def _check(name: str, model: Path, work: Path, pending: dict, produced: dict, browser: bool) -> dict:
    request = {cell: {"out": str(produced[cell]), "batch": 1 if zmodels.SPECS[name].recurrent else None,
                      "int8_out": str(produced["int8"]) if "int8" in produced else None, "browser": browser}
               for cell in pending}
    req_file = work / "check-request.json"
    req_file.write_text(json.dumps(request))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.zoo.checks", str(model), str(work), str(req_file)],
                          capture_output=True, text=True, cwd=REPO, env=_env(), timeout=CHECK_TIMEOUT)
    verdicts = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            verdicts.update(json.loads(line))
    if proc.returncode != 0:
        (work / "check-stderr.txt").write_text(proc.stderr)
    return verdicts


def _save(model: str, cell: str, key: str, record: dict) -> dict:
    record = {**record, "model": model, "cell": cell, "key": f"{key}:{zmodels.source_hash(model)}"}
    f = result_path(model, cell)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(record, indent=2) + "\n")
    return record


def _short(arg: str) -> str:
    """Paths relative to the repository, so the report reads the same on every machine."""
    try:
        return str(Path(arg).resolve().relative_to(REPO))
    except ValueError:
        return arg
