"""LiteRT-LM decode tokens/s and time to first token of a .litertlm whose model has LiteRT-LM's cache layout
("bhsd", exported so: no transpose) against one of the default layout ("bshd", wrapped: every cache transposed at
each call's edge), in LiteRT-LM's own engine (litert-lm-api, CPU). Writes the ``lm-layout`` section of
benchmarks/RESULTS.md (docs/lm.md, "Cache layout").

    .venv/bin/python benchmarks/bench_lm_layout.py [--rounds 9] [--max-len 128 512]

The model: an untrained seeded rotary decoder (edge_tool.lm.model: 2 layers, d=128, 4 heads, prefill 16/64),
exported by edge_tool.lm.export in both layouts, fp32 by edgetool's LM converter path, packed by
edge_tool.lm_converter.litertlm. Rounds alternate the two bundles; a round is one greedy session: the prompt
"The " prefilled, then max_len - 8 decode steps (both bundles generate the same text: checked).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from benchmarks._results import load_line, machine, simd_flags, table, write_section  # noqa: E402
from edge_tool.lm.contract import read_lm_contract  # noqa: E402
from edge_tool.lm.export import export_lm  # noqa: E402
from edge_tool.lm.model import LmConfig, build_lm  # noqa: E402
from edge_tool.lm_converter.build import convert_signatures  # noqa: E402
from edge_tool.lm_converter.litertlm import cache_transposed_saved_model, write_bundle  # noqa: E402

KEYS = ("prefill_16", "prefill_64", "decode")


def build(work: Path, max_len: int) -> dict[str, Path]:
    """The two bundles of one seeded model at ``max_len``: {"bhsd": path, "bshd": path}."""
    import tf_keras as keras

    cfg = LmConfig(max_len=max_len, num_layers=2, d_model=128, num_heads=4, ffn_dim=512, position="rope")
    out = {}
    for layout in ("bhsd", "bshd"):
        keras.utils.set_random_seed(0)
        d = work / f"{layout}-{max_len}"
        spec = export_lm(build_lm(keras, cfg), d / "model", prefill_lengths=(16, 64), cache_layout=layout)
        source = d / "model"
        if layout == "bshd":
            cache_transposed_saved_model(source, KEYS, read_lm_contract(source), d / "wrapped")
            source = d / "wrapped"
        (d / "lm.tflite").write_bytes(convert_signatures(source, KEYS, "fp32"))
        write_bundle(d / "lm.tflite", spec, d / "lm.litertlm", d)
        out[layout] = d / "lm.litertlm"
    return out


def measure(bundles: dict[str, Path], max_len: int, rounds: int) -> dict[str, dict]:
    """Per layout: decode tokens/s and prefill ms of each round, and the generated text."""
    import litert_lm

    litert_lm.set_min_log_severity(litert_lm.LogSeverity.ERROR)
    engines = {
        k: litert_lm.Engine(str(p), max_num_tokens=max_len, cache_dir=tempfile.mkdtemp()) for k, p in bundles.items()
    }
    got = {k: {"tps": [], "ttft": [], "text": None} for k in bundles}
    steps = max_len - 8
    greedy = litert_lm.SamplerConfig(top_k=1, temperature=0.0, seed=0)
    for r in range(rounds):
        for k in list(bundles) if r % 2 == 0 else list(bundles)[::-1]:
            s = engines[k].create_session(apply_prompt_template=False, sampler_config=greedy, max_output_tokens=steps)
            t0 = time.perf_counter()
            s.run_prefill(["The "])
            t1 = time.perf_counter()
            text = s.run_decode().texts[0]
            t2 = time.perf_counter()
            s.close()
            got[k]["tps"].append(steps / (t2 - t1))
            got[k]["ttft"].append((t1 - t0) * 1e3)
            got[k]["text"] = text
    for e in engines.values():
        e.close()
    return got


def main(argv: list[str]) -> None:
    """Build, alternate, write the table."""
    args = argparse.ArgumentParser()
    args.add_argument("--rounds", type=int, default=9)
    args.add_argument("--max-len", type=int, nargs="+", default=[128, 512])
    opts = args.parse_args(argv)
    load0, rows = load_line(), []
    with tempfile.TemporaryDirectory(prefix="bench-lm-layout-") as tmp:
        for max_len in opts.max_len:
            got = measure(build(Path(tmp), max_len), max_len, opts.rounds)
            same = got["bhsd"]["text"] == got["bshd"]["text"]
            a, b = (statistics.median(got[k]["tps"]) for k in ("bhsd", "bshd"))
            ta, tb = (statistics.median(got[k]["ttft"]) for k in ("bhsd", "bshd"))
            rows.append([max_len, f"{a:.0f}", f"{b:.0f}", f"{100 * (b / a - 1):+.0f} %", f"{ta:.2f} / {tb:.2f}", same])
    heads = ["max_len", "decode tok/s bhsd (no transpose)", "decode tok/s bshd (transposed)", "bshd vs bhsd"]
    heads += ["prefill ms bhsd / bshd", "same greedy text"]
    body = "\n".join(
        [
            "## LiteRT-LM: the cache layout's cost (`benchmarks/bench_lm_layout.py`)",
            "",
            f"Host: {machine()}; SIMD: {simd_flags()}; {load0} at the start, {load_line()} at the end (2 cores shared "
            f"with other jobs: loaded when the load exceeds 2). litert-lm-api {version('litert-lm-api')}, CPU. Model: "
            "untrained seeded rotary decoder (2 layers, d=128, 4 heads), fp32; bhsd = exported in LiteRT-LM's cache "
            "layout [1, kv_heads, max_len, head_dim], bundled as it is; bshd = exported in edgetool's default "
            "[1, max_len, kv_heads, head_dim], bundled wrapped (each cache transposed in and out at every call). "
            f'Medians of {opts.rounds} alternating rounds; a round = prefill of "The " + max_len - 8 greedy decode '
            "steps in one session.",
            "",
            table(heads, rows),
        ]
    )
    write_section("lm-layout", body)
    print(body)


if __name__ == "__main__":
    main(sys.argv[1:])
