"""The ``--device`` rows of ``eval --task lm``: each .tflite run on each board by ``device.lm_run`` (the same LM run
as the host's, sent as source) and compared with the reference like a host row; a board that cannot run it gives
that row's failure."""

from __future__ import annotations

from edge_tool.device.facts import device_record, measured_note
from edge_tool.device.lm_run import lm_on_board
from edge_tool.errors import RuntimeFailure
from edge_tool.evaluate.lm_rows import artifact_row, failed_row
from edge_tool.lm.contract import LmContract


def load_request(contract: LmContract, threads: int) -> dict:
    """The ``load`` request's contract facts (what ``board_lm.BoardContract`` reads)."""
    return {
        "threads": threads,
        "max_len": contract.max_len,
        "prefill_lengths": list(contract.prefill_lengths),
        "prefill_keys": list(contract.prefill_keys),
        "num_layers": contract.num_layers,
        "num_kv_heads": contract.num_kv_heads,
        "head_dim": contract.head_dim,
        "cache_layout": contract.cache_layout,
        "vocab_size": contract.vocab_size,
    }


def board_rows(config, arts, text, req: dict, ref_raw: dict, targets, ref_size: int, contract: LmContract) -> list:
    """One row per (board, artefact)."""
    rows = []
    load = load_request(contract, config.threads)
    for url in config.device_urls:
        for art in arts:
            label = f"{art.given} @ {url.name}"
            try:
                hello, raw = lm_on_board(url, art.model_file, load, text.ids, text.prompts, req, len(targets))
            except RuntimeFailure as exc:
                record = device_record(url, {})
                rows.append(
                    failed_row(art, label, str(exc), ref_size, "litert (device)", config.threads, device=record)
                )
                continue
            common = {
                "label": label,
                "cache_bytes": contract.cache_bytes,
                "threads": config.threads,
                "runtime": f"{hello.get('runtime')} (device)",
                "peak_rss_mb": raw.get("peak_rss_mb"),
                "device": device_record(url, hello),
                "latency_note": measured_note(hello),
            }
            rows.append(artifact_row(art, raw, ref_raw, targets, ref_size, common, text.target_bytes))
    return rows
