"""``convert --quant auto`` explains its choice (a reason line, ``decision.json`` ``reason``) and takes
``--require integer-only`` (issue 20.6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge_tool.auto.policy import choose, reason
from edge_tool.auto.result import Candidate
from edge_tool.convert.enums import Objective
from edge_tool.parsers.tflite_model import integer_only_problem
from tests.edgetool_runs import edgetool_in_process
from tests.schema_check import validated
from tests.test_auto import wide_model  # noqa: F401 - the module-scoped fixture, reused

# not in the quick tier: --quant auto builds and measures every candidate (~1.5 min of the quick tier under load)
pytestmark = pytest.mark.slow


def _cand(name, size, acc, drop, p50, ok):
    return Candidate(name, name, Path(f"{name}.tflite"), size, acc, drop, p50, ok)


@pytest.mark.parametrize(
    ("cands", "objective", "chosen", "says"),
    [
        (
            [
                _cand("fp16", 81600, 0.94, 0, 0.010, True),
                _cand("dynamic", 46200, 0.94, 0, 0.030, True),
                _cand("int8", 46400, 0.94, 0, 0.018, True),
            ],
            Objective.SIZE,
            "int8",
            "dynamic and int8 tie on size within 2 %; int8 is 67 % faster on this host than dynamic",
        ),
        (
            [
                _cand("fp16", 81600, 0.94, 0, 0.010, True),
                _cand("dynamic", 46200, 0.94, 0, 0.010, True),
                _cand("int8", 46400, 0.94, 0, 0.010, True),
            ],
            Objective.SIZE,
            "int8",
            "dynamic and int8 tie on size within 2 % and on latency; equally accurate, and int8 is the more integer-only",
        ),
        (
            [
                _cand("fp16", 81600, 0.94, 0, 0.010, True),
                _cand("dynamic", 60000, 0.94, 0, 0.010, True),
                _cand("int8", 40400, 0.909, 0.031, 0.010, False),
            ],
            Objective.SIZE,
            "dynamic",
            "dynamic is the smallest within the budget (60.0 kB; fp16 is 36 % larger) (int8 is smaller but lost 3.1 pt)",
        ),
        (
            [_cand("fp16", 81600, 0.94, 0, 0.004, True), _cand("int8", 40400, 0.94, 0, 0.020, True)],
            Objective.LATENCY,
            "fp16",
            "fp16 is the fastest within the budget (p50 0.004 ms; int8 is 400 % slower)",
        ),
    ],
)
def test_reason_says_why_choose_picked_it(cands, objective, chosen, says):
    """The reason names the winner and the rule that decided (hand-made candidates, expected text by hand)."""
    assert choose(cands, objective).name == chosen
    assert reason(cands, objective).startswith(says)


def test_reason_is_none_without_a_winner():
    assert reason([_cand("int8", 1, 0.5, 0.4, 0.01, False)], Objective.SIZE) is None


def _float_tensors(path: Path) -> set[int]:
    """Indices of float tensors LiteRT reports for a .tflite (an oracle independent of tflite_model)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    return {d["index"] for d in it.get_tensor_details() if np.dtype(d["dtype"]).kind == "f"}


def test_auto_prints_and_records_its_reason(digits_model, tmp_path):
    """A real run: "why X: ..." on the terminal, the same sentence in decision.json, consistent with the sizes."""
    out = tmp_path / "auto"
    proc = edgetool_in_process(
        "convert",
        digits_model,
        "-o",
        out,
        "--quant",
        "auto",
        "--max-drop",
        "0.02",
        "--eval-data",
        digits_model / "eval.npz",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = validated(out / "decision.json", "decision")
    chosen = next(c for c in decision["candidates"] if c["chosen"])
    assert (
        decision["reason"].startswith(chosen["name"])
        or f"and {chosen['name']} tie" in decision["reason"]
        or f"{chosen['name']} and" in decision["reason"]
    )
    assert f"why {chosen['name']}: {decision['reason']}" in " ".join(proc.stdout.split())
    ok = [c for c in decision["candidates"] if c["meets_budget"]]
    smallest = min(c["size_bytes"] for c in ok)
    if sum(c["size_bytes"] <= smallest * 1.02 for c in ok) > 1:
        assert "tie on size within 2 %" in decision["reason"]
    else:
        assert "is the smallest within the budget" in decision["reason"]
    assert "require" not in decision
    for c in decision["candidates"]:  # the file check agrees with the modes' nature
        problem = integer_only_problem((out / ("" if c["chosen"] else "candidates") / c["file"]).read_bytes())
        assert (problem is None) == (c["name"] == "int8"), (c["name"], problem)


def test_require_integer_only_keeps_fully_integer_candidates(digits_model, tmp_path):
    """--require integer-only: only int8 is built and chosen; LiteRT sees float tensors only at the model's I/O."""
    out = tmp_path / "auto"
    proc = edgetool_in_process(
        "convert",
        digits_model,
        "-o",
        out,
        "--quant",
        "auto",
        "--max-drop",
        "0.02",
        "--eval-data",
        digits_model / "eval.npz",
        "--require",
        "integer-only",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decision = validated(out / "decision.json", "decision")
    assert decision["require"] == "integer-only"
    assert [c["name"] for c in decision["candidates"]] == ["int8"] and decision["chosen"] == "int8"
    chosen = out / decision["candidates"][0]["file"]
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(chosen))
    io = {d["index"] for d in it.get_input_details()} | {d["index"] for d in it.get_output_details()}
    assert _float_tensors(chosen) <= io


def test_require_integer_only_says_so_when_none_qualifies(wide_model, tmp_path):
    """The wide model's int8 is at chance and selective int8 keeps float layers: nothing qualifies, exit 1."""
    out = tmp_path / "auto"
    proc = edgetool_in_process(
        "convert",
        wide_model,
        "-o",
        out,
        "--quant",
        "auto",
        "--max-drop",
        "0.02",
        "--eval-data",
        wide_model / "eval.npz",
        "--require",
        "integer-only",
    )
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, text[-3000:]
    assert "selective int8 skipped" in text and "--require integer-only" in text
    assert not list(out.glob("*.tflite")) and list((out / "candidates").glob("*_int8.tflite"))


def test_require_needs_auto_and_a_known_value(digits_model, tmp_path):
    proc = edgetool_in_process(
        "convert", digits_model, "-o", tmp_path / "a", "--quant", "int8", "--require", "integer-only"
    )
    assert proc.returncode == 2 and "--require" in proc.stderr
    proc = edgetool_in_process(
        "convert",
        digits_model,
        "-o",
        tmp_path / "b",
        "--quant",
        "auto",
        "--max-drop",
        "0.02",
        "--eval-data",
        digits_model / "eval.npz",
        "--require",
        "int4",
    )
    assert proc.returncode == 2 and "integer-only" in proc.stderr
