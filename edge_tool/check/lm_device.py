"""``check LM.tflite --device URL``: the litert-cpu verdict of a language model decided on the board's own runtime.

The board loads every signature (``prefill_<T>`` and ``decode``: ``device.board_lm``, the runner eval uses) and runs
``lm_cache``'s plan — the shortest prefill, then decode calls each fed the caches the call before returned; its
decode logits must equal LiteRT's here. A runtime that refuses the file gives the reason and the way out
(``device.runtime_refusal``: an op version the runtime does not have, and the modes that load there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.check import lm_cache
from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.device.facts import device_record
from edge_tool.device.lm_run import lm_on_board
from edge_tool.device.runtime_refusal import BoardRefusedModel
from edge_tool.device.url import DeviceURL
from edge_tool.evaluate.lm_device import load_request
from edge_tool.lm.contract import read_lm_contract


def board_request(plan: lm_cache.Plan) -> tuple[list[int], dict]:
    """(ids, ``lm`` request) making the board's teacher-forced run the plan: one prefill of ``plan.t`` tokens, then
    one decode per remaining token (a last id is added: teacher forcing decodes every token but the last)."""
    req = {"prefill_len": plan.t, "new_tokens": 0, "stop_ids": [], "bos": None, "timing": False}
    return [*plan.tokens, 0], {**req, "temperature": 0.0, "top_k": 0, "seed": 0}


def lm_on_device(path: Path, url: DeviceURL) -> TargetResult:
    """litert-cpu of the LM ``path`` on the board; RuntimeFailure (exit 2) when the board cannot be asked."""
    reference, details = lm_cache.litert_check(path)
    contract = read_lm_contract(path)
    plan = lm_cache.plan_of(contract)
    ids, req = board_request(plan)
    method = f"every signature loaded and {lm_cache.DECODE_STEPS} decode calls fed back, on {url.name}, over ssh"
    try:
        hello, raw = lm_on_board(url, path, load_request(contract, 1), ids, [], req, len(ids) - 1)
    except BoardRefusedModel as exc:
        return target_result("litert-cpu", path, [Finding("(model)", Status.UNSUPPORTED, str(exc))], method, {})
    runtime = f"{hello.get('runtime')} {hello.get('runtime_version')}"
    got = np.asarray(raw["logits"])[np.asarray(raw["decode"], bool)]
    findings = lm_cache.compare(details["decode_logits"], got.tolist(), f"{runtime} on {url.name}")
    extra = {"runtime": hello.get("runtime"), "device": device_record(url, hello)}
    return target_result("litert-cpu", path, reference + findings, f"{method} ({runtime})", extra)
