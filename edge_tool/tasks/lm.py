"""Language models (issue 39): a contract LM (prefill/decode signatures, docs/lm.md) measured on a held-out text
(``eval --task lm --text``), not on samples. Its metrics come from ``edge_tool.lm.drift`` (perplexity from
``edge_tool.lm.measure.perplexity``); ``--max-drop`` gates the relative perplexity drift (0.01 = perplexity 1 %
above the reference's). The sample-stream accumulators do not apply: eval runs ``evaluate.lm_eval`` instead."""

from __future__ import annotations

from edge_tool.errors import UsageError
from edge_tool.tasks.base import Accumulator, Task, TaskContext
from edge_tool.tasks.registry import TASKS

METRIC_KEYS = (
    "perplexity",
    "bits_per_byte",
    "reference_perplexity",
    "greedy",
    "seeded",
    "ttft_ms",
    "decode_short",
    "decode_full",
)
DRIFT_KEYS = (
    "next_token_agreement",
    "perplexity_drift",
    "mean_kl",
    "max_abs_logit_prefill",
    "max_abs_logit_decode",
    "logit_scale",
)
NOT_SAMPLES = (
    "the lm task is measured on a text, not on --data samples: give --text heldout.txt (and --prompts) "
    "with an LM reference (docs/lm.md)"
)


class LanguageModel(Task):
    """Next-token prediction with a KV cache: perplexity (lower is better) and its drift from the reference."""

    name = "lm"
    main_metric = "perplexity"
    higher_is_better = False
    metric_keys = METRIC_KEYS
    drift_keys = DRIFT_KEYS
    percent = frozenset({"next_token_agreement"})

    def labels(self, labels, ref, ctx: TaskContext, data):
        """Refused: an LM has no labels."""
        raise UsageError(NOT_SAMPLES)

    def drift(self, ctx: TaskContext) -> Accumulator:
        """Refused: LM drift is computed by ``edge_tool.lm.drift`` over a text."""
        raise UsageError(NOT_SAMPLES)

    def scores(self, ctx: TaskContext) -> Accumulator:
        """Refused (see ``drift``)."""
        raise UsageError(NOT_SAMPLES)

    def agreement(self, drift: dict) -> float | None:
        """Teacher-forced next-token agreement with the reference."""
        return drift.get("next_token_agreement")

    def uses_labels(self) -> bool:
        """Measured against the reference only."""
        return False


TASKS.register(LanguageModel())
