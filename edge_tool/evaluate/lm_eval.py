"""``edgetool eval --task lm``: a contract LM's .tflite artefacts against its reference SavedModel on a held-out text
(issue 39): perplexity and its drift, mean KL, teacher-forced agreement, |Δlogit| at prefill vs decode positions,
greedy and seeded continuations, TTFT per prefill length, decode tokens/s at short and near-full context, load time
and memory — on the host (LiteRT in this process, the plain signature-runner loop of ``edge_tool.lm.measure``) and
on every ``--device`` board (``device.lm_board``: the same loop, sent as source). One ``Report`` as for every task.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.core.childproc import module_command
from edge_tool.errors import ModelError, RuntimeFailure, UsageError, collect_and_raise
from edge_tool.evaluate.artifacts import saved_model_size
from edge_tool.evaluate.config import EvalConfig
from edge_tool.evaluate.lm_device import board_rows
from edge_tool.evaluate.lm_rows import artifact_row, failed_row, reference_row
from edge_tool.evaluate.machine import machine_info
from edge_tool.evaluate.outputs import check_outputs
from edge_tool.evaluate.report import Report
from edge_tool.lm.contract import LmContract, looks_like_lm, read_lm_contract
from edge_tool.lm.measure import lm_run, targets_of, windows
from edge_tool.lm.session import LmSession, saved_model_call
from edge_tool.lm.tokenizer.registry import Tokenizer, load_tokenizer, tokenizer_folder
from edge_tool.models.readers import ArtifactFormat, describe
from edge_tool.models.signatures import saved_model_signatures, validate_saved_model_dir
from edge_tool.tasks import TaskChoice, get_task
from edge_tool.trust.guard import require_no_side_effects

MAX_TEXT_BYTES = 1 << 20  # a held-out text beyond this is cut (teacher forcing is one decode call per token)
DEFAULT_PROMPTS, PROMPT_TOKENS, NEW_TOKENS = 8, 16, 32
SAMPLING = {"temperature": 0.8, "top_k": 40, "seed": 0}


def is_lm_reference(reference: Path) -> bool:
    """True when the reference SavedModel's signatures are named like the LM contract's."""
    try:
        return Path(reference).is_dir() and looks_like_lm(saved_model_signatures(Path(reference)))
    except Exception:  # not readable as an LM: the sample pipeline says why
        return False


@dataclass(frozen=True)
class LmText:
    """The held-out text's ids and the prompts (ids), with how they were chosen; ``target_bytes``: the UTF-8 bytes
    the scored next tokens stand for (bits per byte)."""

    ids: tuple[int, ...]
    prompts: tuple[tuple[int, ...], ...]
    summary: str
    warnings: tuple[str, ...]
    target_bytes: int | None = None


def model_tokenizer(reference: Path, contract: LmContract) -> Tokenizer:
    """The reference's tokenizer (its ``edgetool_lm.json``'s; the byte one when it has none)."""
    return load_tokenizer(contract.described(), tokenizer_folder(reference))


def utf8_text(raw: bytes, option: str, path, cut: bool) -> str:
    """``raw`` decoded as UTF-8 (a character split by the cut at its end dropped); UsageError naming the first byte
    that is not UTF-8, since a replaced byte would change every figure measured on the text without a word."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if cut and e.start >= len(raw) - 3 and e.reason == "unexpected end of data":
            return raw[: e.start].decode("utf-8")
        raise UsageError(
            f"{option} {path} must be UTF-8 text; byte {e.start} (0x{raw[e.start]:02x}) is not ({e.reason}). Convert "
            "it first, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8, and pass that file."
        ) from None


def read_text(config: EvalConfig, contract: LmContract) -> LmText:
    """The ids of --text (its first MAX_TEXT_BYTES bytes) and of --prompts (one per line; default: DEFAULT_PROMPTS
    slices of the text), in the reference's tokenizer; UsageError for a text too short or an empty prompts file."""
    spec = contract.spec
    tokenizer = model_tokenizer(config.reference, contract)
    raw = Path(config.text).read_bytes()
    warnings = (
        [f"--text {config.text} was cut to its first {MAX_TEXT_BYTES} bytes."] if len(raw) > MAX_TEXT_BYTES else []
    )
    ids = tuple(tokenizer.encode(utf8_text(raw[:MAX_TEXT_BYTES], "--text", config.text, cut=len(raw) > MAX_TEXT_BYTES)))
    if len(ids) < 2 * PROMPT_TOKENS:
        raise UsageError(f"--text {config.text} holds {len(ids)} tokens; eval needs at least {2 * PROMPT_TOKENS}.")
    if config.prompts is not None:
        lines = utf8_text(Path(config.prompts).read_bytes(), "--prompts", config.prompts, cut=False).splitlines()
        prompts = tuple(tuple(tokenizer.encode(x)[: contract.max_len // 2]) for x in lines if x.strip())
        if not prompts:
            raise UsageError(f"--prompts {config.prompts} has no non-empty line (one prompt per line).")
    else:
        step = max(1, (len(ids) - PROMPT_TOKENS) // DEFAULT_PROMPTS)
        prompts = tuple(ids[i : i + PROMPT_TOKENS] for i in range(0, step * DEFAULT_PROMPTS, step))
    bos = spec.bos_id if spec is not None else None
    count = len(windows(ids, contract.max_len, bos))
    scored = sum(len(tokenizer.token_bytes(t)) for t in targets_of(ids, contract.max_len, bos))
    summary = (
        f"{min(len(raw), MAX_TEXT_BYTES)} bytes of {Path(config.text).name} = {len(ids)} {tokenizer.name} tokens "
        f"({count} window(s) of up to {contract.max_len} tokens), {len(prompts)} prompt(s)"
    )
    return LmText(ids, prompts, summary, tuple(warnings), scored)


def run_request(config: EvalConfig, contract: LmContract, timing: bool = True) -> dict:
    """What every runtime runs (``measure.lm_run``'s request)."""
    runs = config.effective_runs or 20
    spec = contract.spec
    return {
        "prefill_len": min(contract.prefill_lengths[-1], contract.max_len // 2) or 1,
        "new_tokens": min(NEW_TOKENS, contract.max_len // 2),
        "stop_ids": list(spec.stop_ids) if spec is not None else [],
        "bos": spec.bos_id if spec is not None else None,
        **SAMPLING,
        "timing": timing,
        "warmup": config.warmup,
        "reps": min(runs, 20),
        "steps": min(runs, contract.max_len // 2),
    }


def _artifacts(config: EvalConfig, contract: LmContract) -> tuple[list, list[str]]:
    """(described .tflite artefacts with their contract checked, problems)."""
    arts, problems = [], []
    for path in config.artifacts:
        try:
            if Path(path).suffix == ".litertlm":
                raise UsageError(
                    f"{path}: eval --task lm runs .tflite artefacts; a .litertlm runs in LiteRT-LM, whose Python API "
                    "(litert-lm-api 0.18) gives neither logits nor token ids, only text, and samples with its own "
                    "seeded sampler, so perplexity, agreement and seeded continuations cannot be measured there. "
                    "convert --litertlm checks each bundle's greedy text against edgetool's; eval the .tflite beside it."
                )
            art = describe(path)
            if art.format is not ArtifactFormat.TFLITE:
                raise UsageError(f"{path}: eval --task lm runs .tflite artefacts (LiteRT), not {art.format.value}.")
            theirs = read_lm_contract(art.model_file)
            for name in ("max_len", "vocab_size", "num_layers", "num_kv_heads", "head_dim", "cache_layout"):
                if getattr(theirs, name) != getattr(contract, name):
                    raise UsageError(
                        f"{path}: its {name} is {getattr(theirs, name)}, the reference's {getattr(contract, name)}."
                    )
            arts.append(art)
        except (UsageError, ModelError) as exc:  # LmContractError is a ModelError
            problems.append(str(exc))
    return arts, problems


def host_run(path: Path, threads: int, text: LmText, req: dict) -> dict:
    """The LM run of one .tflite in a fresh LiteRT process (``lm_worker``), with load, cold-start ms and its peak
    RSS; RuntimeFailure with the worker's last words when it fails."""
    with tempfile.TemporaryDirectory(prefix="edgetool-lm-") as tmp:
        request = {"model": str(path), "threads": threads, "ids": list(text.ids), "prompts": list(text.prompts)}
        request |= {"req": req, "out": str(Path(tmp) / "arrays.npz")}
        (Path(tmp) / "request.json").write_text(json.dumps(request), encoding="utf-8")
        cmd = module_command("edge_tool.evaluate.lm_worker", str(Path(tmp) / "request.json"))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            said = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            raise RuntimeFailure(said[-1] if said else f"the LiteRT worker exited with {proc.returncode}")
        with np.load(request["out"]) as arrays:
            return {**json.loads(lines[-1]), "logits": arrays["logits"], "decode": arrays["decode"]}


def run_lm_eval(config: EvalConfig) -> Report:
    """Evaluate every .tflite of ``config`` as an LM against its reference (module docstring)."""
    if config.text is None:
        raise UsageError(
            f"{config.reference} is a language model (prefill/decode signatures): eval measures it on a text. "
            "Give --text heldout.txt (and optionally --prompts prompts.txt) instead of --data."
        )
    check_outputs(config)
    validate_saved_model_dir(config.reference)
    contract = read_lm_contract(config.reference)
    arts, problems = _artifacts(config, contract)
    collect_and_raise(problems, UsageError, "Some artefacts cannot be evaluated:" if len(problems) > 1 else "")
    for path in (config.reference, *(a.model_file for a in arts)):
        require_no_side_effects(
            path, config.trust_model_code, "edgetool eval (it runs the reference and each artefact)"
        )
    text = read_text(config, contract)
    req = run_request(config, contract)
    targets = targets_of(text.ids, contract.max_len, req["bos"])
    started = time.perf_counter()
    ref_raw = lm_run(LmSession(saved_model_call(config.reference), contract), text.ids, text.prompts, req)
    stages = {"reference": time.perf_counter() - started}
    ref_size = saved_model_size(config.reference)
    memory = {"model_bytes": ref_size, "cache_bytes": contract.cache_bytes}
    reference = reference_row(str(config.reference), ref_size, ref_raw, targets, memory, text.target_bytes)
    results = []
    for art in arts:
        common = {"label": str(art.given), "cache_bytes": contract.cache_bytes, "threads": config.threads}
        try:
            raw = host_run(art.model_file, config.threads, text, req)
        except Exception as exc:  # the runtime refused or broke on it: that row's failure
            results.append(
                failed_row(art, str(art.given), f"does not run in LiteRT: {exc}", ref_size, "litert", config.threads)
            )
            continue
        rss = raw.get("peak_rss_mb")
        common_row = {**common, "runtime": "litert", "peak_rss_mb": rss}
        row = artifact_row(art, raw, ref_raw, targets, ref_size, common_row, text.target_bytes)
        results.append(row)
    stages["artefacts (host)"] = time.perf_counter() - started - stages["reference"]
    if config.device_urls:
        results += board_rows(config, arts, text, req, ref_raw, targets, ref_size, contract)
        stages["artefacts (devices)"] = time.perf_counter() - started - sum(stages.values())
    return _report(config, reference, results, text, req, stages)


def _report(config: EvalConfig, reference, results: list, text: LmText, req: dict, stages: dict) -> Report:
    task = get_task("lm")
    why = "--task lm" if config.task == "lm" else "the reference's prefill/decode signatures follow the LM contract"
    settings = {
        "threads": config.threads,
        "warmup": config.warmup,
        "runs": config.effective_runs,
        "time_budget_s": None,
        "max_drop": config.max_drop,
        "max_latency_ms": config.max_latency_ms,
        "lm": {k: v for k, v in req.items() if k != "timing"},
    }
    data = {
        "path": str(config.text),
        "summary": text.summary,
        "samples": len(text.ids),
        "labels": False,
        "warnings": list(text.warnings),
        "prompts": str(config.prompts) if config.prompts else None,
    }
    notes = (
        "LM rows: perplexity over the text in windows of max_len tokens on empty caches (<bos> first when the "
        "model has one; each window's first prefill_len tokens "
        "through prefill, the rest one decode call each); |Δlogit| split into prefill and decode positions; "
        "greedy and seeded continuations (edge_tool.lm.sampling's xorshift32) compared token for token with the "
        "reference's; latency = one decode step (call + argmax, cache fed back) at short context.",
        "Memory: 'model+cache' is the file's bytes plus the KV cache's at max_len; 'peak RSS' is measured, the "
        "runner process's VmHWM (host: a fresh LiteRT-only process per artefact, as a board's runner; it includes "
        "Python, numpy and LiteRT themselves).",
    )
    return Report(
        reference,
        tuple(results),
        data,
        machine_info(),
        settings,
        notes,
        {k: round(v, 3) for k, v in stages.items()},
        TaskChoice("lm", why, overridden=config.task == "lm").to_dict(task),
    )
