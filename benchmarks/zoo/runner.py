"""Run (model × cell) through the real edgetool CLI, check each result independently, cache it, resume.

Layout under ``benchmarks/.cache/zoo/`` (gitignored): ``models/NAME`` (built models), ``work/NAME/CELL`` (what each
cell wrote), ``results/NAME/CELL.json`` (outcome + verdict, keyed by a hash of edgetool's source, the zoo's source
and the CLI's options, so a rerun skips what is still valid and redoes what changed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.zoo import cells as zcells
from benchmarks.zoo import models as zmodels
from benchmarks.zoo import store as zstore
from benchmarks.zoo import wayout

REPO = Path(__file__).resolve().parents[2]
CHECK_TIMEOUT = 1800


def _env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "CUDA_VISIBLE_DEVICES": "",
    }


def edgetool(*args: str, timeout: float) -> tuple[int | None, str, str, float]:
    """Run ``python -m edge_tool ARGS``: (exit code or None on timeout, stdout, stderr, seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tool", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=_env(),
        start_new_session=True,
    )
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


def ensure_model(name: str, log) -> Path:
    """The built model (from the cache when its source is unchanged)."""
    out = zstore.CACHE / "models" / name
    if not zmodels.is_built(out):
        log(f"[{name}] building")
        info = zmodels.build(name, out)
        log(f"[{name}] built in {info['build_seconds']} s, held-out accuracy {info['eval_accuracy']}")
    return out


def run_model(name: str, cells: list[str], features: zcells.Features, key: str, browser: bool, log) -> dict:
    """Every requested cell of one model: CLI runs first, then one check process for everything produced."""
    spec = zmodels.SPECS[name]
    results = {c: r for c in cells if (r := zstore.load_result(name, c, key))}
    todo = [c for c in zcells.CELLS if c in cells and c not in results]
    if not todo:
        return results
    model = ensure_model(name, log)
    work = zstore.CACHE / "work" / name
    produced = {
        c: work / c
        for c in zcells.CELLS
        if c in results and results[c]["status"] in ("ok", "wrong") and (work / c).is_dir()
    }
    produced.update(
        {
            f"{c}@wayout": work / f"{c}-wayout"
            for c, r in results.items()  # what a named way out built
            if (r.get("way_out") or {}).get("status") == "produced" and (work / f"{c}-wayout").is_dir()
        }
    )
    pending, refused = {}, {}

    def other(mode, dest, extra):  # another mode's command, writing into dest, with the options a refusal named
        return [*zcells.command(mode, model, dest, spec, features, produced), *extra]

    for cell in todo:
        out = work / cell
        shutil.rmtree(out, ignore_errors=True)
        args = zcells.command(cell, model, out, spec, features, produced)
        if args is None:
            results[cell] = zstore.save(
                name,
                cell,
                key,
                {
                    "status": "blocked",
                    "reason": "no artefact of fp32/int8/tfjs to evaluate (those cells produced nothing)",
                    "command": None,
                },
            )
            continue
        record, err = _run_cell(cell, args, out)
        log(f"[{name}] {cell}: {record['status']} ({record['seconds']:.0f} s) {record['reason'][:120]}")
        if record["status"] == "produced":
            produced[cell] = out
            pending[cell] = record
            continue
        (out.mkdir(parents=True, exist_ok=True), (out / "stderr.txt").write_text(err))
        if record["status"] == "refused":
            _try_way_out(name, cell, args, record, work, pending, produced, log, other)
            refused[cell] = record
        else:
            results[cell] = zstore.save(name, cell, key, record)
    if pending or refused:
        verdicts = _check(name, model, work, pending, refused, produced, browser)
        for cell, record in pending.items():
            if "@" in cell:
                continue
            v = verdicts.get(cell, {"status": "unchecked", "reason": "the check process died", "metrics": {}})
            record.update(status=v["status"], reason=v["reason"], metrics=v.get("metrics", {}))
            log(f"[{name}] {cell}: checked {v['status']} {v['reason'][:120]}")
            results[cell] = zstore.save(name, cell, key, record) if v["status"] != "unchecked" else record
        for cell, record in refused.items():
            record.update(_judge_refusal(record, verdicts.get(cell), verdicts.get(f"{cell}@wayout")))
            log(f"[{name}] {cell}: judged {record['status']} {record['reason'][:160]}")
            results[cell] = zstore.save(name, cell, key, record)
    return results


def _run_cell(cell: str, args: list[str], out: Path) -> tuple[dict, str]:
    """Run one CLI command for ``cell``: (its record: status, reason, rc, seconds, command; its stderr)."""
    if cell in ("eval", "demo"):
        out.mkdir(parents=True, exist_ok=True)
    timeout = zcells.TIMEOUTS.get(cell, zcells.DEFAULT_TIMEOUT)
    rc, _, err, seconds = edgetool(*args, timeout=timeout)
    status, reason = zcells.classify(cell, rc, err, timeout)
    return {
        "status": status,
        "reason": reason,
        "rc": rc,
        "seconds": round(seconds, 1),
        "command": "edgetool " + " ".join(_short(a) for a in args),
    }, err


def _try_way_out(name, cell, args, record, work, pending, produced, log, other) -> None:
    """When the refusal names an option (``wayout``), run the cell again with it; when it names another mode with an
    option (``wayout.named_mode``), run that mode's command (``other(mode, out, options)``) with it, checked as that
    mode. A produced result is checked."""
    out = work / f"{cell}-wayout"
    mode = wayout.named_mode(record["reason"], cell)
    if mode is not None:
        extra = wayout.named_options(record["reason"], mode, [])
        new_args = other(mode, out, extra)
        extra = ["--quant", mode, *extra]
    else:
        extra = wayout.named_options(record["reason"], cell, args)
        new_args = [
            str(out) + a[len(str(work / cell)) :] if a.startswith(str(work / cell)) else a
            for a in wayout.with_options(args, extra)
        ]
    if not extra:
        return
    shutil.rmtree(out, ignore_errors=True)
    way, _ = _run_cell(mode or cell, new_args, out)
    record["way_out"] = {
        "options": " ".join(extra),
        "status": way["status"],
        "reason": way["reason"],
        "seconds": way["seconds"],
    }
    log(f"[{name}] {cell}: way out {' '.join(extra)}: {way['status']} {way['reason'][:100]}")
    if way["status"] == "produced":
        produced[f"{cell}@wayout"] = out
        pending[f"{cell}@wayout"] = {**way, "check_as": mode or cell}


def _judge_refusal(record: dict, justified: dict | None, way_verdict: dict | None) -> dict:
    """A refusal stays 'refused' when its reason is the real one (the check process's ``justified`` verdict: the
    expected cause named, the raw tools fail too) and a way out it names works; otherwise it is 'unclear'."""
    notes, unclear = [], []
    justified = justified or {"status": "unchecked", "reason": "the check process died"}
    if justified["status"] != "ok":
        unclear.append(justified["reason"])
    elif justified.get("reason"):
        notes.append(justified["reason"])
    way = record.get("way_out")
    if way:
        if way["status"] == "produced" and way_verdict and way_verdict["status"] == "ok":
            notes.append(f"way out {way['options']} tried: works")
        elif way["status"] == "produced":
            v = way_verdict or {"status": "unchecked", "reason": "not checked"}
            unclear.append(f"way out {way['options']} produces a file that is {v['status']}: {v['reason'][:150]}")
        else:
            unclear.append(f"way out {way['options']} tried: {way['status']}: {way['reason'][:200]}")
    status = "unclear" if unclear else "refused"
    reason = record["reason"] + "".join(f" [{n}]" for n in notes + unclear)
    return {"status": status, "reason": reason, "judgement": {"unclear": unclear, "notes": notes}}


def _check(name: str, model: Path, work: Path, pending: dict, refused: dict, produced: dict, browser: bool) -> dict:
    """One check process for every produced output (``cell`` or ``cell@wayout``) and every refusal's reason."""
    batch = 1 if zmodels.SPECS[name].recurrent else None
    request = {
        cell: {
            "out": str(produced[cell]),
            "batch": batch,
            "browser": browser,
            "int8_out": str(produced["int8"]) if "int8" in produced else None,
            "check_as": pending[cell].get("check_as"),
        }
        for cell in pending
    }
    request.update({cell: {"refused": record["reason"], "batch": batch} for cell, record in refused.items()})
    req_file = work / "check-request.json"
    req_file.write_text(json.dumps(request))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.zoo.checks", str(model), str(work), str(req_file)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(),
        timeout=CHECK_TIMEOUT,
    )
    verdicts = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            verdicts.update(json.loads(line))
    if proc.returncode != 0:
        (work / "check-stderr.txt").write_text(proc.stderr)
    return verdicts


def _short(arg: str) -> str:
    """Paths relative to the repository, so the report reads the same on every machine."""
    try:
        return str(Path(arg).resolve().relative_to(REPO))
    except ValueError:
        return arg
