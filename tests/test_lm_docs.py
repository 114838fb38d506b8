"""docs/lm.md's worked example (a tf.Module with hand-written prefill/decode endpoints) runs, passes the contract
check, and its chunked prefill + decode through the caches equals the model's own one-call pass."""

from __future__ import annotations

import re

import numpy as np
import pytest

from edge_tool.lm.session import open_session
from tests.edgetool_runs import REPO

pytestmark = pytest.mark.slow


def _example() -> str:
    text = (REPO / "docs" / "lm.md").read_text()
    block = re.search(r"<!-- lm-example:start -->\n```python\n(.*?)```\n<!-- lm-example:end -->", text, re.S)
    assert block, "docs/lm.md lost its example markers"
    return block.group(1)


def test_the_docs_example_writes_a_contract_lm(tmp_path, monkeypatch):
    import tensorflow as tf

    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(_example(), "docs/lm.md", "exec"), scope)  # our own docs' code
    session = open_session(tmp_path / "tiny_lm")  # validates the contract first
    assert session.contract.prefill_lengths == (8,) and session.contract.num_layers == 1
    tokens = np.random.default_rng(0).integers(0, 256, 20).astype(np.int32)
    got = np.concatenate([session.prefill(tokens[:8]), session.prefill(tokens[8:13], 8)])
    got = np.concatenate([got, *[session.decode(t)[None] for t in tokens[13:]]])
    zeros = tf.zeros([1, scope["MAX_LEN"], 1, scope["D"]])
    full = scope["model"].step(tf.constant(tokens[None]), tf.range(20), zeros, zeros)["logits"].numpy()[0]
    assert np.abs(got - full).max() <= 1e-5 * np.abs(full).max()
