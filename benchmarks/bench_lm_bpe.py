"""Byte-level vs BPE at the same training budget (issue 39): `edgetool train --model lm` with the byte tokenizer (8
epochs, its default) and with `--tokenizer bpe --vocab-size 1024` for as many optimizer steps (the BPE text is ~3.3×
fewer tokens, so ~26 epochs of the same batch and window: the same tokens through the same network, only the
embedding differs), then on the same held-out text: bits per byte (eval's perplexity computation over the
SavedModel's prefill/decode, turned per byte), and on each fp32 .tflite (LiteRT, 1 thread): time to first token for
the same prompt text, decode tokens/s and the bytes of text per second they give. Writes the `lm-bpe` section of
benchmarks/RESULTS.md. Usage: .venv/bin/python benchmarks/bench_lm_bpe.py [--keep DIR] [--epochs-scale F]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _results import machine, table, write_section
from bench_lm_train import simd_flags

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.measure import log_softmax, targets_of, teacher_forced
from edge_tool.lm.sampling import greedy
from edge_tool.lm.session import LmSession, open_session, tflite_call
from edge_tool.lm.tokenizer.registry import load_tokenizer, tokenizer_folder
from edge_tool.lm_converter.build import convert_signatures

RUNS = {"byte": ["--epochs", "8"], "bpe": ["--tokenizer", "bpe", "--vocab-size", "1024", "--epochs", "26"]}
PROMPT_BYTES = 60  # the same text prefilled by both models (TTFT)
HELD_BYTES = 8000  # held-out bytes scored for bits per byte
REPS, STEPS = 20, 64


def train(name: str, out: Path) -> dict:
    """One training run in a fresh process (skipped when ``out`` holds one): train.json + wall and CPU seconds."""
    if not (out / "train.json").is_file():
        cmd = [sys.executable, "-m", "edge_tool", "train", "--model", "lm", "--strategy", "default", "-o", str(out)]
        start, cpu0 = time.perf_counter(), _child_cpu()
        proc = subprocess.run(cmd + RUNS[name], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        (out / "bench.json").write_text(json.dumps({"wall": time.perf_counter() - start, "cpu": _child_cpu() - cpu0}))
    return {**json.loads((out / "train.json").read_text()), **json.loads((out / "bench.json").read_text())}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bits_per_byte(model: Path, text: str) -> tuple[float, float, int]:
    """(bits per byte, perplexity per token, tokens) of ``text`` through the SavedModel (eval's windows, <bos>)."""
    session = open_session(model)
    spec = session.contract.spec
    ids = load_tokenizer(spec, tokenizer_folder(model)).encode(text)
    logits, _ = teacher_forced(session, ids, 64, spec.bos_id)
    targets = targets_of(ids, spec.max_len, spec.bos_id)
    nats = -log_softmax(logits)[range(len(targets)), targets].sum()
    return nats / (len(text.encode()) * math.log(2)), math.exp(nats / len(targets)), len(ids)


def speed(model: Path, tflite: Path, prompt: str) -> dict:
    """TTFT (ms, the prompt through session.feed + argmax) and decode ms per step, medians, 1 thread."""
    contract = read_lm_contract(model)
    tokenizer = load_tokenizer(contract.spec, tokenizer_folder(model))
    ids = [contract.spec.bos_id, *tokenizer.encode(prompt)]
    session = LmSession(tflite_call(tflite, 1), contract)
    ttft = []
    for _ in range(REPS + 2):
        session.reset()
        t0 = time.perf_counter_ns()
        token = greedy(session.feed(ids)[-1])
        ttft.append((time.perf_counter_ns() - t0) / 1e6)
    decode, out = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter_ns()
        logits = session.decode(token)
        token = greedy(logits)
        decode.append((time.perf_counter_ns() - t0) / 1e6)
        out.append(token)
        if session.position >= contract.max_len:
            break
    text_bytes = len(tokenizer.decode(out).encode())
    return {
        "tokens": len(ids),
        "ttft": statistics.median(ttft[2:]),
        "decode": statistics.median(decode),
        "bytes_per_token": text_bytes / len(out),
    }


def main() -> None:
    """Train (or reuse --keep), measure, print and record."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", type=Path, default=Path("/tmp/edgetool-bench-lm-bpe"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    for name in RUNS:
        out = args.keep / name
        r = train(name, out)
        held = (out / "heldout.txt").read_text()[:HELD_BYTES]
        bpb, ppl, n = bits_per_byte(out, held)
        contract = read_lm_contract(out)
        tflite = out.parent / f"{name}.tflite"
        if not tflite.is_file():
            keys = (*contract.prefill_keys, "decode")
            tflite.write_bytes(convert_signatures(out, keys, "fp32"))
        s = speed(out, tflite, held[:PROMPT_BYTES])
        tps = 1000 / s["decode"]
        rows.append(
            [
                name,
                contract.vocab_size,
                r["config"]["epochs"],
                f"{r['wall']:.0f} s / {r['cpu']:.0f} s",
                f"{r['eval_bits_per_byte']:.3f}",
                f"{bpb:.3f}",
                f"{ppl:.2f} ({n} tokens)",
                f"{s['tokens']}",
                f"{s['ttft']:.2f}",
                f"{tps:.0f}",
                f"{tps * s['bytes_per_token']:.0f}",
                f"`{(r['sample']['prompt'] + r['sample']['text'])[:90]}`".replace("\n", " / "),
            ]
        )
    load_after = os.getloadavg()
    loaded = load_before[0] > 1
    body = (
        "## Byte-level vs BPE at the same training budget (`benchmarks/bench_lm_bpe.py`)\n\n"
        f"Machine: {machine()}; SIMD: {simd_flags()}. Load average {load_before[0]:.1f} before, {load_after[0]:.1f} "
        f"after on {os.cpu_count()} cores"
        + (" — **loaded** (other helpers shared the cores): times are upper bounds." if loaded else ".")
        + "\n\n"
        "Both: the bundled model (2 layers, d 128, rope, max_len 128 tokens), `--strategy default`, batch 32, "
        "128-token windows, the same number of optimizer steps (byte 8 epochs × 86 steps; BPE-1024 26 epochs × 27 "
        f"steps). Bits per byte: train.json's (Keras' held-out loss) and eval's computation on the first "
        f"{HELD_BYTES} bytes of heldout.txt (64-token prefill then decode, windows of max_len with <bos>). TTFT: "
        f"<bos> + the first {PROMPT_BYTES} bytes of heldout.txt through the fp32 .tflite (LiteRT, 1 thread, "
        f"prefill_16/64 chunks then decode), median of {REPS}; decode: median of {STEPS} greedy steps; bytes/s = "
        "tokens/s × the generated text's bytes per token.\n\n"
        + table(
            [
                "tokenizer",
                "vocab",
                "epochs",
                "train wall / CPU",
                "bits/byte (train.json)",
                "bits/byte (eval)",
                "perplexity / token",
                "prompt tokens",
                "TTFT ms",
                "decode tok/s",
                "decode bytes/s",
                "sample",
            ],
            rows,
        )
        + "\n"
    )
    print(body)
    write_section("lm-bpe", body)


if __name__ == "__main__":
    main()
