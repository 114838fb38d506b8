"""The rows of an LM eval (``eval --task lm``): one LM run's raw results (``edge_tool.lm.measure.lm_run``: the host's
LiteRT, the reference's TensorFlow, or a board's runner) turned into the report's ``ArtifactResult`` /
``ReferenceResult`` with the ``lm`` task's metrics and drift (``edge_tool.lm.drift``)."""

from __future__ import annotations

import math

import numpy as np

from edge_tool.evaluate.rows import ArtifactResult, LatencyStats, ReferenceResult
from edge_tool.evaluate.runners import NONE_FIELDS
from edge_tool.lm.drift import continuation_match, logit_drift, speed
from edge_tool.lm.measure import perplexity


def decode_latency(raw: dict) -> LatencyStats | None:
    """The row's latency_ms: one decode step (call + argmax, cache fed back) at short context; cold start = load +
    the first call."""
    timed = raw.get("timed")
    if not timed:
        return None
    ms = np.asarray(timed["decode_short_ns"], np.float64) / 1e6
    return LatencyStats(
        p50=float(np.median(ms)),
        p90=float(np.percentile(ms, 90)),
        p99=float(np.percentile(ms, 99)),
        mean=float(ms.mean()),
        std=float(ms.std()),
        cold_start=raw.get("cold_start_ms"),
        runs=int(ms.size),
    )


def lm_metrics(
    raw: dict, targets: np.ndarray, ref_ppl: float | None, ref: dict | None, memory: dict, nbytes: int | None = None
) -> dict:
    """The ``metrics`` of one row: perplexity (per token) and bits per byte (``nbytes``: the UTF-8 bytes the targets
    stand for), the reference's perplexity, continuation matches (None on the reference row), TTFT and decode speed,
    load time and memory (model + cache)."""
    ppl = perplexity(raw["logits"], targets)
    out = {
        "perplexity": ppl,
        "bits_per_byte": math.log2(ppl) * len(targets) / nbytes if nbytes else None,
        "reference_perplexity": ref_ppl,
        "greedy": continuation_match(ref["greedy"], raw["greedy"]) if ref else None,
        "seeded": continuation_match(ref["seeded"], raw["seeded"]) if ref else None,
        "load_ms": raw.get("load_ms"),
        "memory": memory,
    }
    if raw.get("timed"):
        out.update(speed(raw["timed"]))
    return out


def reference_row(
    path: str, size: int, raw: dict, targets: np.ndarray, memory: dict, nbytes: int | None = None
) -> ReferenceResult:
    """The reference SavedModel's row (TensorFlow, the same loop)."""
    metrics = lm_metrics(raw, targets, None, None, memory, nbytes)
    metrics["reference_perplexity"] = metrics["perplexity"]
    return ReferenceResult(
        path, size, None, None, decode_latency(raw), "tensorflow (SavedModel signatures)", "logits", metrics
    )


def artifact_row(
    art, raw: dict, ref_raw: dict, targets: np.ndarray, ref_size: int, common: dict, nbytes: int | None = None
) -> ArtifactResult:
    """One artefact's row (host or board: ``common`` carries runtime, threads, device, latency note, peak RSS)."""
    drift = logit_drift(ref_raw["logits"], raw["logits"], ref_raw["decode"], targets)
    memory = {"model_bytes": art.size_bytes, "cache_bytes": common.pop("cache_bytes")}
    memory["total_bytes"] = memory["model_bytes"] + memory["cache_bytes"]
    metrics = lm_metrics(raw, targets, perplexity(ref_raw["logits"], targets), ref_raw, memory, nbytes)
    worst = [v for v in (drift["max_abs_logit_prefill"], drift["max_abs_logit_decode"]) if v is not None]
    return ArtifactResult(
        artifact=common.pop("label"),
        format="tflite",
        quant=art.quant,
        size_bytes=art.size_bytes,
        size_ratio=art.size_bytes / ref_size if ref_size else 0.0,
        accuracy=None,
        top_k_accuracy=None,
        reference_accuracy=None,
        accuracy_drop=None,
        top1_agreement=drift["next_token_agreement"],
        max_abs_error=max(worst) if worst else None,
        mean_abs_error=None,
        cosine=None,
        latency=decode_latency(raw),
        metrics=metrics,
        drift=drift,
        metric_drop=drift["perplexity_drift"],
        **common,
    )


def failed_row(art, label: str, why: str, ref_size: int, runtime: str, threads: int, **extra) -> ArtifactResult:
    """A row whose runtime could not run the artefact (``failed`` says why)."""
    return ArtifactResult(
        **NONE_FIELDS,  # the measured fields every failed row leaves empty (evaluate.runners)
        artifact=label,
        format="tflite",
        quant=art.quant,
        size_bytes=art.size_bytes,
        size_ratio=art.size_bytes / ref_size if ref_size else 0.0,
        reference_accuracy=None,
        latency=None,
        peak_rss_mb=None,
        threads=threads,
        runtime=runtime,
        failed=why,
        **extra,
    )
