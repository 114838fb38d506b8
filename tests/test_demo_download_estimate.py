"""demo says what a first visit will download before it builds the page, estimated from the weights the model
declares (issue 43, item 2): one line on stderr above ``EDGETOOL_DEMO_NOTICE_BYTES`` (lowered here so a tiny model
crosses it), exit 0, and the estimate in the site report."""

from __future__ import annotations

import pytest

from edge_tool.demo.config import DemoConfig
from edge_tool.demo.download_estimate import NOTICE_ENV, download_notice, first_visit_estimate, notice_bytes
from edge_tool.demo.model import ModelKind
from edge_tool.parsers.declared_weights import declared_weight_bytes
from tests.edgetool_runs import run_edgetool


def test_notice_only_above_the_threshold(monkeypatch):
    assert notice_bytes() == 100_000_000
    assert download_notice(100_000_000) is None and download_notice(None) is None
    said = download_notice(407_000_000)
    assert "about 407 MB" in said and NOTICE_ENV in said
    monkeypatch.setenv(NOTICE_ENV, "1000")
    assert "about 1,234 bytes" in download_notice(1234)


def test_estimate_is_the_declared_weights_of_the_saved_model(flat_model, tmp_path):
    weights = declared_weight_bytes(flat_model)
    # Dense(4 -> 3): kernel and bias, float32, as the checkpoint index declares; plus the graph's Consts (here two
    # int32 scalars of the save function)
    assert weights == (4 * 3 + 3) * 4 + 2 * 4
    cfg = DemoConfig(model=flat_model, output=tmp_path / "site")
    assert first_visit_estimate(cfg, ModelKind.SAVED_MODEL) == weights


@pytest.mark.slow
def test_demo_says_the_estimate_before_building_and_exits_0(flat_model, tmp_path):
    proc = run_edgetool("demo", flat_model, "-o", tmp_path / "site", env={NOTICE_ENV: "10"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    notes = [line for line in proc.stderr.splitlines() if "a first visit to this demo site will download" in line]
    assert len(notes) == 1 and f"about {declared_weight_bytes(flat_model)} bytes" in notes[0], proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
