"""The contract of tests/edgetool_runs.py: a fork of the test server, a fresh interpreter and an in-process run of
the same commands give the same exit codes, the same output (timings aside) and the same files (timings aside), and
one list of variables read at import decides both when a run must be fresh and what an in-process run refuses."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests import zygote
from tests.edgetool_runs import ZYGOTE, edgetool_in_process, run_edgetool, zygote_wanted

# Measured values that differ from run to run on any machine; every other field must agree.
_TIMING_KEYS = frozenset({"created", "seconds", "timings_s", "latency_ms", "peak_rss_mb"})


def _session(run, model: Path, work: Path) -> list:
    """inspect, convert (fp32 + dynamic), eval of both with --json, and a refusal (the output exists: exit 2)."""
    conv = work / "conv"
    procs = [run("inspect", model), run("convert", model, "-o", conv, "--quant", "fp32", "--quant", "dynamic")]
    data = ("--reference", model, "--data", model / "eval.npz", "--json", work / "eval.json", "--runs", "5")
    procs.append(run("eval", *sorted(conv.glob("*.tflite")), *data, "--warmup", "1"))
    procs.append(run("convert", model, "-o", conv, "--quant", "fp32"))
    return procs


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in _TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _text(out: str, timed: bool) -> str:
    """``out`` as compared: a command that prints timings has its numbers masked and the table padding and rules
    they widen collapsed (the numbers themselves are compared through the files it wrote)."""
    if not timed:
        return out
    out = re.sub(r"\d+(\.\d+)?", "#", out)
    return re.sub(r"([ ─━═])\1+", r"\1", out)


def _files(work: Path) -> dict[str, object]:
    """Every file the session wrote: JSON without its timing fields, the rest as bytes."""
    found = {}
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        found[str(path.relative_to(work))] = _without_timings(json.loads(raw)) if path.suffix == ".json" else raw
    return found


@pytest.mark.slow  # 20 s in the full suite (load 1-5): four fresh interpreters pay TensorFlow's import
def test_fork_and_in_process_runs_behave_like_a_fresh_process(flat_model, tmp_path):
    ways = {"fresh": lambda *a: run_edgetool(*a, fresh=True), "fork": run_edgetool, "in-process": edgetool_in_process}
    assert zygote_wanted(dict(os.environ)), "the default run must be a fork, or this compares nothing"
    work, seen = tmp_path / "run", {}
    for name, run in ways.items():  # one path for every way, so paths in the output and manifests agree
        work.mkdir()
        procs = _session(run, flat_model, work)
        seen[name] = (procs, _files(work))
        shutil.move(work, tmp_path / name)
    fresh_procs, fresh_files = seen["fresh"]
    assert [p.returncode for p in fresh_procs] == [0, 0, 0, 2], "\n".join(p.stderr[-3000:] for p in fresh_procs)
    assert {"conv/model_fp32.tflite", "conv/model_dynamic.tflite", "conv/manifest.json", "eval.json"} <= set(
        fresh_files
    )
    for name in ("fork", "in-process"):
        procs, files = seen[name]
        for step, (want, got) in enumerate(zip(fresh_procs, procs)):
            timed = step in (1, 2)  # convert and eval print seconds and latencies
            where = f"{name}: {('inspect', 'convert', 'eval', 'refused convert')[step]}"
            assert got.returncode == want.returncode, where
            assert _text(got.stdout, timed) == _text(want.stdout, timed), where
            assert _text(got.stderr, timed) == _text(want.stderr, timed), where
        assert files == fresh_files, f"{name}: the files written differ from a fresh process's"


def test_one_list_decides_a_fresh_process_and_an_in_process_refusal():
    """A variable read at import sends a run to a fresh interpreter and is refused in process; others fork."""
    base = dict(os.environ)
    for name in ("TF_ENABLE_ONEDNN_OPTS", "HOME", "EDGETOOL_VERBOSE", "OMP_NUM_THREADS", "PYTHONHASHSEED"):
        assert name.startswith(zygote.READ_AT_IMPORT), name
        changed = {**base, name: base.get(name, "") + "-changed"}
        assert not zygote_wanted(changed), name
        with pytest.raises(ValueError, match=name):
            edgetool_in_process("--version", env={name: changed[name]})
    assert zygote_wanted({**base, "EDGETOOL_CONVERT_WORKERS": "1"}), zygote.differs_at_import(base, ZYGOTE._env or base)
    # what OpenCV's import does to the test process (a missing directory first on LD_LIBRARY_PATH) still forks;
    # a directory that exists does not
    libs = base.get("LD_LIBRARY_PATH")
    missing = os.pathsep.join([str(Path(__file__).parent / "no-such-lib64"), *([libs] if libs else [])])
    assert zygote_wanted({**base, "LD_LIBRARY_PATH": missing})
    assert not zygote_wanted({**base, "LD_LIBRARY_PATH": os.pathsep.join([str(Path(__file__).parent), missing])})
    assert edgetool_in_process("--version", env={"EDGETOOL_CONVERT_WORKERS": "1"}).returncode == 0


def test_test_helpers_have_one_import_name():
    """Every helper under tests/ is imported as ``tests.X`` (never as a top-level ``X``, which would load a second
    copy of it), and no module imports conftest: pytest injects its fixtures by name."""
    root = Path(__file__).resolve().parent
    local = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if (p / "__init__.py").exists()}
    wrong = []
    for path in sorted([*root.rglob("*.py"), *(root.parent / "benchmarks").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                first = name.split(".")[0]
                if first in local or name.endswith("conftest") or first == "conftest":
                    wrong.append(f"{path.relative_to(root.parent)}:{node.lineno}: {name}")
    assert not wrong, wrong
