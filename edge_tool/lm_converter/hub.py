"""A Keras-Hub CausalLM ``.keras`` file as ``convert --task lm``'s source: its contract SavedModel is written beside
the files (``<stem>/``, eval's ``--reference``), checked against the Keras-Hub model's own forward pass, and that
forward pass is the reference every file's self-check measures against."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.errors import ConversionError
from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.export import DEFAULT_PREFILL
from edge_tool.lm.keras_hub import export_hub_lm, hub_logits, load_hub
from edge_tool.lm.session import LmSession, saved_model_call
from edge_tool.lm_converter.selfcheck import Probe, probe_tokens, run_chunked

EXPORT_TOLERANCE = 1e-5  # the SavedModel's chunked run against Keras-Hub's forward pass, × the logit scale


def export_hub_source(model: Path, out: Path, max_len: int | None, prefill_lengths, seed: int) -> Probe:
    """Write ``model``'s contract SavedModel into the new directory ``out``; the Keras-Hub model's own logits over the
    self-check's tokens (ConversionError when the endpoints disagree with them beyond EXPORT_TOLERANCE)."""
    keras_model = load_hub(model)
    out.mkdir()
    export_hub_lm(keras_model, out, prefill_lengths=prefill_lengths or DEFAULT_PREFILL, max_len=max_len)
    contract = read_lm_contract(out)
    tokens, prompt = probe_tokens(contract, seed)
    reference = Probe(tokens, prompt, hub_logits(keras_model, tokens))
    chunked = run_chunked(LmSession(saved_model_call(out), contract), tokens, prompt)
    drift = float(np.abs(chunked - reference.logits).max())
    if not drift <= EXPORT_TOLERANCE * reference.scale:
        raise ConversionError(
            f"The prefill/decode endpoints written for {model.name} differ from the Keras-Hub model's own forward "
            f"pass by {drift:.3g} (allowed {EXPORT_TOLERANCE:g} × logit scale {reference.scale:.3g}): this model "
            "uses a layer variant edgetool's Keras-Hub adapter does not reproduce. Write the endpoints yourself "
            "(docs/lm.md) and convert that SavedModel."
        )
    return reference
