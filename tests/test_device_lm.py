"""``eval --task lm --device`` on the emulated aarch64 board (tests/device_board.py): the board's row (the LM run sent
as source, tflite_runtime's signature runners there) equals the board's own plain loop (plain ssh + tflite_runtime,
none of edgetool's code: perplexity and greedy continuations) and the host's continuations."""

from __future__ import annotations

import json
import os
import shutil
import uuid

import numpy as np
import pytest

from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.measure import continuations, perplexity, targets_of
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import LmSession, tflite_call
from edge_tool.lm.spec import BYTE_BOS
from edge_tool.lm_converter.build import convert_signatures
from tests import device_board
from tests.builds import built_once, run_script
from tests.edgetool_runs import edgetool_in_process
from tests.lm_models import BUILD

pytestmark = pytest.mark.slow
TEXT = b"It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want."
PROMPTS = ("It is a truth", "However little")
NEW = 32

# The board's own loop: windows of <bos> + 63 tokens, the first 16 through prefill_16, the rest decode; greedy continuations
# (the prompt through prefill_16, padded with 0); caches fed back by hand.
_PLAIN = """
import json, sys
import numpy as np
from tflite_runtime.interpreter import Interpreter
work = sys.argv[1]
req = json.load(open(work + "/req.json"))
it = Interpreter(model_path=work + "/lm.tflite", num_threads=1)
pre, dec = it.get_signature_runner("prefill_16"), it.get_signature_runner("decode")
names = [n for n in dec.get_input_details() if n.startswith("kv_cache_")]
zero = {n: np.zeros(dec.get_input_details()[n]["shape"], np.float32) for n in names}
def prefill(tokens):
    padded = list(tokens) + [0] * (16 - len(tokens))
    o = pre(tokens=np.array([padded], np.int32), input_pos=np.arange(16, dtype=np.int32), **zero)
    return o["logits"][0, :len(tokens)], {n: o[n] for n in names}
def step(tok, pos, caches):
    o = dec(tokens=np.array([[tok]], np.int32), input_pos=np.array([pos], np.int32), **caches)
    return o["logits"][0, 0], {n: o[n] for n in names}
ids, rows = req["ids"], []
for s in range(0, len(ids), 63):
    w = [req["bos"]] + ids[s:s + 63]
    p = min(16, len(w) - 1)
    logits, caches = prefill(w[:p])
    rows += list(logits)
    for i, tok in enumerate(w[p:-1]):
        l, caches = step(tok, p + i, caches)
        rows.append(l)
greedy = []
for prompt in req["prompts"]:
    logits, caches = prefill(prompt)
    out, l = [], logits[-1]
    for i in range(req["new"]):
        tok = int(np.argmax(l))
        out.append(tok)
        if i + 1 < req["new"]:
            l, caches = step(tok, len(prompt) + i, caches)
    greedy.append(out)
np.save(work + "/logits.npy", np.array(rows, np.float32))
json.dump(greedy, open(work + "/greedy.json", "w"))
"""


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The emulated board (cached build), its sshd running for this module."""
    why = device_board.missing() or device_board.binfmt_problem()
    if why:
        if os.environ.get("EDGETOOL_ALLOW_NO_DEVICE") == "1":
            pytest.skip(f"EDGETOOL_ALLOW_NO_DEVICE=1 and {why}")
        pytest.fail(f"{why} (.ci/run installs qemu-user-static, debootstrap and openssh-server)")
    b = device_board.start(device_board.build(device_board.cache_dir()), tmp_path_factory.mktemp("board-home"))
    yield b
    b.stop()


def _board_plain(board, model, ids) -> tuple[np.ndarray, list]:
    work = board.root / "tmp" / f"lm-plain-{uuid.uuid4().hex}"
    work.mkdir()
    try:
        shutil.copy(model, work / "lm.tflite")
        req = {"ids": ids, "prompts": [list(p.encode()) for p in PROMPTS], "new": NEW, "bos": BYTE_BOS}
        (work / "req.json").write_text(json.dumps(req))
        proc = board.ssh(f"python3 - /tmp/{work.name}", stdin=_PLAIN.encode(), timeout=900)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return np.load(work / "logits.npy"), json.loads((work / "greedy.json").read_text())
    finally:
        shutil.rmtree(work)


def test_board_row_equals_the_boards_own_loop_and_the_host(board, tmp_path_factory, tmp_path):
    built = built_once(tmp_path_factory, "tiny-lm-eval", lambda d: run_script(BUILD, d, "eval"))
    model = built / "lm_fp32.tflite"
    text, prompts, out = tmp_path / "t.txt", tmp_path / "p.txt", tmp_path / "r.json"
    text.write_bytes(TEXT)
    prompts.write_text("\n".join(PROMPTS) + "\n")
    args = ["eval", str(model), "--reference", str(built / "model"), "--text", str(text), "--prompts", str(prompts)]
    args += ["--device", board.url, "--runs", "3", "--warmup", "1", "--json", str(out)]
    proc = edgetool_in_process(*args, env={"EDGETOOL_SSH_CONFIG": str(board.ssh_config)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    host, dev = json.loads(out.read_text())["results"]
    assert dev["device"]["machine"] == "aarch64" and dev["device"]["runtime"] == "tflite_runtime"
    assert dev["peak_rss_mb"] > 0 and dev["metrics"]["decode_full"]["tokens_per_s"] > 0
    for kind in ("greedy", "seeded"):  # the board's continuations are the reference's, so the host's too
        assert dev["metrics"][kind]["exact"] == host["metrics"][kind]["exact"] == len(PROMPTS)
    ids = list(TEXT)
    logits, greedy = _board_plain(board, model, ids)
    targets = targets_of(ids, 64, BYTE_BOS)
    assert dev["metrics"]["perplexity"] == pytest.approx(perplexity(logits, targets), rel=1e-5)
    assert dev["metrics"]["perplexity"] == pytest.approx(host["metrics"]["perplexity"], rel=1e-5)
    session = LmSession(tflite_call(model), read_lm_contract(model))
    host_greedy = continuations(session, [list(p.encode()) for p in PROMPTS], NEW, Sampler())
    assert greedy == host_greedy


def test_check_on_the_board_feeds_the_cache_back_or_says_why_the_mode_does_not_load(board, tmp_path_factory, tmp_path):
    """check --device of an LM: fp32 loads every signature and feeds the cache back on the board's tflite_runtime
    2.14; dynamic int8 (FULLY_CONNECTED v12) is refused with the op version and the modes that load there."""
    built = built_once(tmp_path_factory, "tiny-lm-eval", lambda d: run_script(BUILD, d, "eval"))
    dynamic = tmp_path / "lm_dynamic.tflite"
    dynamic.write_bytes(convert_signatures(built / "model", ("prefill_8", "prefill_16", "decode"), "dynamic"))
    env = {"EDGETOOL_SSH_CONFIG": str(board.ssh_config)}
    ok = edgetool_in_process(
        "check", str(built / "lm_fp32.tflite"), "-t", "litert-cpu", "--device", board.url, "--json", env=env
    )
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    result = json.loads(ok.stdout)["results"][0]
    assert result["verdict"] == "runs" and "tflite_runtime" in result["method"]
    bad = edgetool_in_process("check", str(dynamic), "-t", "litert-cpu", "--device", board.url, env=env)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    said = " ".join(bad.stdout.split())
    assert "no FULLY_CONNECTED kernel of version 12" in said and "fp32, fp16 and weight-int8" in said
