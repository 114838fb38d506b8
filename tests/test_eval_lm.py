"""``eval --task lm`` (issue 39 item 4) on the tiny LM of tests/lm_models.py: the fp32 .tflite's perplexity equals
the reference's, greedy and seeded continuations match exactly, and an artefact whose decode ignores the cache
shows error at decode positions only and fails the --max-drop gate; the reports validate against the schema."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from edge_tool.device.answers import BadAnswer
from edge_tool.device.lm_run import checked_answer
from edge_tool.errors import UsageError
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.lm_eval import utf8_text
from edge_tool.evaluate.lm_report import LM_HEADERS
from edge_tool.lm.drift import continuation_match, logit_drift
from edge_tool.lm.measure import perplexity
from tests.builds import built_once, run_script
from tests.edgetool_runs import edgetool_in_process
from tests.lm_models import BUILD
from tests.schema_check import validated

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
    "of a wife. However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families.\n"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """model/ (the tiny LM), lm_fp32.tflite and lm_forgetful.tflite (its decode ignores the cache)."""
    return built_once(tmp_path_factory, "tiny-lm-eval", lambda d: run_script(BUILD, d, "eval"))


def test_perplexity_and_drift_are_what_they_say():
    logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]))
    assert perplexity(logits, [0, 1]) == pytest.approx(np.exp(-(np.log(0.5) + np.log(0.8)) / 2))
    drift = logit_drift(logits, logits + np.array([[0, 0, 0], [0, 0, 1.0]]), np.array([False, True]), np.array([0, 1]))
    assert drift["max_abs_logit_prefill"] == 0 and drift["max_abs_logit_decode"] == 1.0
    assert drift["mean_kl"] > 0 and drift["next_token_agreement"] == 1.0
    assert continuation_match([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 6]]) == {
        "exact": 1,
        "prompts": 2,
        "mean_prefix": 2.0,
        "mean_length": 2.5,
    }


def test_lm_options_are_checked_together(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    with pytest.raises(Exception) as exc:
        EvalConfig((tmp_path / "a.tflite",), tmp_path, data=text, text=text, prompts=tmp_path / "none.txt")
    said = str(exc.value)
    assert "--task lm reads --text" in said and "--prompts" in said and "not a file" in said


@pytest.mark.slow
def test_fp32_equals_the_reference_and_a_cache_bug_is_decode_only(built, tmp_path):
    text, prompts = tmp_path / "heldout.txt", tmp_path / "prompts.txt"
    text.write_text(TEXT)
    prompts.write_text("It is a truth\nHowever little\n")
    out = {k: tmp_path / f"r.{k}" for k in ("json", "md", "html")}
    args = [str(built / "lm_fp32.tflite"), str(built / "lm_forgetful.tflite"), "--reference", str(built / "model")]
    args += ["--text", str(text), "--prompts", str(prompts), "--max-drop", "0.0001", "--runs", "5", "--warmup", "1"]
    args += ["--json", str(out["json"]), "--markdown", str(out["md"]), "--html", str(out["html"])]
    proc = edgetool_in_process("eval", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the forgetful artefact breaks the budget
    assert "lm_forgetful.tflite: perplexity +" in proc.stdout + proc.stderr
    assert "lm_fp32.tflite: perplexity" not in proc.stdout + proc.stderr
    doc = validated(out["json"], "eval")
    assert doc["task"]["name"] == "lm" and doc["task"]["main_metric"] == "perplexity"
    fp32, broken = doc["results"]
    ref_ppl = doc["reference"]["metrics"]["perplexity"]
    assert fp32["metrics"]["perplexity"] == pytest.approx(ref_ppl, rel=1e-5)
    assert abs(fp32["metric_drop"]) < 1e-5 and fp32["drift"]["next_token_agreement"] == 1.0
    for kind in ("greedy", "seeded"):  # fp32: the same tokens as TensorFlow, the same noise
        match = fp32["metrics"][kind]
        assert match["exact"] == match["prompts"] == 2 and match["mean_prefix"] == match["mean_length"] > 0
    scale = fp32["drift"]["logit_scale"]
    assert fp32["drift"]["max_abs_logit_decode"] <= 1e-4 * scale
    assert broken["drift"]["max_abs_logit_prefill"] <= 1e-4 * scale  # its prefills are right …
    assert broken["drift"]["max_abs_logit_decode"] > 100 * max(broken["drift"]["max_abs_logit_prefill"], 1e-6)
    assert broken["metric_drop"] > 0.0001
    speed = fp32["metrics"]
    assert set(speed["ttft_ms"]) == {"8", "16"} and speed["decode_short"]["tokens_per_s"] > 0
    assert speed["memory"]["cache_bytes"] == 2 * 2 * 64 * 4 * 8 * 4
    assert 10 < fp32["peak_rss_mb"] < 2000  # measured: the host runner's own process (VmHWM), beside model+cache
    assert "### Language model" in out["md"].read_text() and "Language model" in out["html"].read_text()
    md = out["md"].read_text().splitlines()
    head, rule = md[md.index("### Language model") + 2 : md.index("### Language model") + 4]
    assert len(re.split(r"(?<!\\)\|", head)) == len(re.split(r"(?<!\\)\|", rule)) == len(LM_HEADERS) + 2
    assert json.loads(out["json"].read_text())["settings"]["lm"]["prefill_len"] == 16


@pytest.mark.slow
def test_lm_reference_without_text_says_so(built, tmp_path):
    proc = edgetool_in_process("eval", str(built / "lm_fp32.tflite"), "--reference", str(built / "model"))
    assert proc.returncode == 2 and "--text" in proc.stdout + proc.stderr


def _answer(**over):
    h = {"lm": True, "greedy": [[1, 2]], "seeded": [[3]], "load_ms": 1.0, "cold_start_ms": 2.0, "peak_rss_mb": 9.0}
    h["timed"] = {"ttft_ns": {"8": [5]}, "decode_short_ns": [1], "decode_full_ns": [1], "positions": [8, 60]}
    return {**h, **over}


@pytest.mark.parametrize(
    ("over", "said"),
    [
        ({"greedy": [[1, 300]]}, "token ids in 0..263"),
        ({"seeded": [[1], [2]]}, "1 lists"),
        ({"greedy": [[1] * 5]}, "at most 4"),
        ({"load_ms": -1}, "load_ms"),
        (
            {"timed": {"ttft_ns": {"9": [5]}, "decode_short_ns": [1], "decode_full_ns": [1], "positions": [8, 60]}},
            "TTFT",
        ),
        ({"lm": None}, "instead of an LM run"),
    ],
)
def test_a_boards_lm_answer_is_checked(over, said):
    """A board's answer is hostile input: tokens inside the vocabulary, as many lists as prompts, no longer than
    asked, measurements >= 0, the TTFT lengths asked for."""
    arrays = {"logits": np.zeros((3, 264), np.float32), "decode": np.zeros(3, bool)}
    req = {"new_tokens": 4, "timing": True}
    assert checked_answer(_answer(), arrays, 1, req, (8,), 264)["greedy"] == [[1, 2]]
    with pytest.raises(BadAnswer, match=said):
        checked_answer(_answer(**over), arrays, 1, req, (8,), 264)
    with pytest.raises(BadAnswer, match="finite"):
        checked_answer(_answer(), {**arrays, "logits": np.full((3, 264), np.nan, np.float32)}, 1, req, (8,), 264)


def test_text_that_is_not_utf8_is_refused_not_replaced():
    """A latin-1 held-out text would be measured on U+FFFD bytes that are not in it: refused, naming the byte; a
    character split by the 1 MiB cut is only dropped."""
    with pytest.raises(UsageError, match=r"byte 3 \(0xe9\)"):
        utf8_text(b"abc\xe9def", "--text", "t.txt", cut=False)
    assert utf8_text("abé".encode()[:3], "--text", "t.txt", cut=True) == "ab"
    with pytest.raises(UsageError):
        utf8_text("abé".encode()[:3], "--text", "t.txt", cut=False)
