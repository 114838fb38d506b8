"""The BPE tokenizer option end to end (edge_tool.lm.tokenizer.bpe): a byte-level BPE trained with Hugging Face
``tokenizers`` round-trips any text; the page's JS (web_demo/lm/bpe.js) gives exactly its ids on a corpus of ASCII,
accents, CJK, emoji and whitespace runs; and a contract LM over it (a seeded untrained tiny decoder with a BPE of 300
ids, built once) converts with its tokenizer.json beside the files and in the .litertlm (LiteRT-LM's engine
continues a multi-byte prompt as edgetool does), is measured by eval in bits per byte, and generates in the page the
native greedy tokens. ``train --tokenizer bpe`` ships the tokenizer it trained on the training split."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edge_tool.cli import app
from edge_tool.demo.serve import start_server
from edge_tool.lm.contract import read_lm_contract
from edge_tool.lm.generate import generate
from edge_tool.lm.sampling import Sampler
from edge_tool.lm.session import LmSession, open_session, tflite_call
from edge_tool.lm.spec import SPEC_NAME, LmSpec, parse_spec
from edge_tool.lm.spec import TOKENIZERS as spec_tokenizers
from edge_tool.lm.tokenizer.bpe import SPECIALS, train_bpe
from edge_tool.lm.tokenizer.registry import TOKENIZER_FILE, TOKENIZERS, load_tokenizer, tokenizer_folder
from edge_tool.lm_converter.bundle import greedy_text
from edge_tool.lm_converter.litertlm import engine_greedy
from edge_tool.training.lm_data import bundled_text, split_text
from tests.builds import built_once, run_script
from tests.edgetool_runs import REPO, edgetool_in_process, run_edgetool
from tests.test_browser import CHROMIUM, FLAGS, _require_chromium
from tests.test_page_js import _node

pytestmark = pytest.mark.skipif(find_spec("tokenizers") is None, reason="the lm extra: pip install -e '.[lm]'")
HAS_LITERT_LM = all(find_spec(m) for m in ("litert_lm", "litert_lm_builder"))
CORPUS = (
    "In the beginning God created the heaven and the earth.   And the earth was without form,\n"
    "Crème brûlée à la française — naïve façade, Ångström; don't we'll they're I'm you've she'd.\n"
    "日本語のテキストと中文字符，한국어 문장도。 Emoji: 🎉🙂👍🏽 👨‍👩‍👧 flags 🇫🇷🇯🇵!\n"
    "Whitespace runs:    four spaces,\ttab,\t\ttwo tabs,\n  leading and trailing   \nmultiple\n\n\n"
    "blank lines, nbsp\u00a0here, ideographic\u3000space, 12345 3.14 1,000,000 x²³ ½.\n"
    "Specials in text: <bos> <eos><pad> and <bo s>.\n"
)
VOCAB = 300
PROMPT = "Crème 日本 🎉  ok"
NODE_DRIVER = """
import fs from 'node:fs';
import { bpeTokenizer } from '%s/web_demo/lm/bpe.js';
const tok = bpeTokenizer(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const out = JSON.parse(fs.readFileSync(process.argv[3], 'utf8')).map((text) => {
  const ids = tok.encode(text);
  const d = tok.decoder();
  return { ids, back: ids.map((i) => d.push(i)).join('') + d.flush() };
});
fs.writeFileSync(process.argv[4], JSON.stringify(out));
"""
# a seeded untrained tiny decoder over the BPE in argv[2], written as a contract SavedModel at argv[1]/model
BUILD = """
import sys
from pathlib import Path
import tf_keras as keras
from edge_tool.lm.export import export_lm
from edge_tool.lm.model import LmConfig, build_lm
out, tokenizer = Path(sys.argv[1]), Path(sys.argv[2]).read_text()
keras.utils.set_random_seed(0)
model = build_lm(keras, LmConfig(vocab_size=304, max_len=64, num_layers=2, d_model=32, num_heads=4, ffn_dim=64))
export_lm(model, out / "model", prefill_lengths=(8, 16), tokenizer="bpe", bos_id=0, eos_id=1, pad_id=2, stop_ids=(1,))
(out / "model" / "assets" / "tokenizer.json").write_text(tokenizer)
"""


@pytest.fixture(scope="module")
def tokenizer_json() -> str:
    """A BPE of VOCAB ids trained on some bundled text and the corpus (so merges span multi-byte characters)."""
    return train_bpe(bundled_text()[:5_000] + "\n\n" + CORPUS * 10, VOCAB)


def _load(tokenizer_json: str, folder: Path):
    (folder / TOKENIZER_FILE).write_text(tokenizer_json)
    spec = LmSpec(304, 64, (8,), 1, 1, 8, tokenizer="bpe", bos_id=0, eos_id=1, pad_id=2, stop_ids=(1,))
    return load_tokenizer(spec, folder)


def test_a_trained_bpe_round_trips_text_with_its_specials_first(tokenizer_json, tmp_path):
    tok = _load(tokenizer_json, tmp_path)
    plain = CORPUS.replace("<bos>", "").replace("<eos>", "").replace("<pad>", "")
    ids = tok.encode(CORPUS)
    assert len(json.loads(tokenizer_json)["model"]["vocab"]) == VOCAB and [tok.encode(s) for s in SPECIALS] == [
        [0],
        [1],
        [2],
    ]
    assert tok.decode(ids) == plain and b"".join(tok.token_bytes(i) for i in ids) == plain.encode()
    assert len(ids) < 0.9 * len(CORPUS.encode())  # merges took (multi-byte characters included)
    assert any(len(tok.token_bytes(i)) > 1 and tok.token_bytes(i)[0] >= 0x80 for i in ids)


def test_the_page_js_bpe_gives_the_python_ids(tokenizer_json, tmp_path):
    tok = _load(tokenizer_json, tmp_path)
    held = split_text(bundled_text())[1][:20_000]
    texts = [CORPUS, held, PROMPT, "", " ", "   \n\n\t ", "a  b", "🎉🎉🎉", "x<eos>y"]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    (tmp_path / "driver.mjs").write_text(NODE_DRIVER % REPO)
    args = [tmp_path / n for n in ("driver.mjs", TOKENIZER_FILE, "texts.json", "out.json")]
    subprocess.run([_node(), *map(str, args)], check=True, timeout=120)
    got = json.loads((tmp_path / "out.json").read_text())
    for text, js in zip(texts, got, strict=True):
        assert js["ids"] == tok.encode(text), text[:40]
        assert js["back"] == tok.decode(js["ids"])


@pytest.fixture(scope="module")
def bpe_lm(tmp_path_factory, tokenizer_json) -> Path:
    def build(where: Path) -> None:
        (where / "tok.json").write_text(tokenizer_json)
        run_script(BUILD, where, where / "tok.json")

    return built_once(tmp_path_factory, "tiny-lm-bpe", build)


@pytest.fixture(scope="module")
def bpe_converted(bpe_lm, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bpe-convert") / "lm"
    extra = ("--litertlm",) if HAS_LITERT_LM else ()
    proc = run_edgetool("convert", bpe_lm / "model", "-o", out, "--quant", "fp32", *extra)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.mark.slow
def test_convert_ships_the_tokenizer_and_litert_lm_continues_as_edgetool(bpe_lm, bpe_converted):
    shipped = (bpe_lm / "model" / "assets" / TOKENIZER_FILE).read_text()
    assert (bpe_converted / TOKENIZER_FILE).read_text() == shipped
    if not HAS_LITERT_LM:
        pytest.skip("litert-lm-api is not installed: the .litertlm half needs the lm extra")
    doc = json.loads((bpe_converted / "manifest.json").read_text())
    assert doc["artifacts"][0]["lm"]["litertlm"]["greedy_match"] is True
    contract = read_lm_contract(bpe_lm / "model")
    tok = load_tokenizer(contract.spec, tokenizer_folder(bpe_lm / "model"))
    ours = greedy_text(None, contract, contract.spec, tok, PROMPT, session=open_session(bpe_lm / "model"))
    engine = engine_greedy(bpe_converted / "model_fp32.litertlm", contract.spec, PROMPT)
    assert engine == ours and ours  # the oracle: TensorFlow's greedy tokens, through the HF tokenizer both sides


@pytest.mark.slow
def test_eval_reads_the_bpe_and_reports_bits_per_byte(bpe_lm, bpe_converted, tmp_path):
    text = tmp_path / "held.txt"
    plain = CORPUS.replace("<bos>", "").replace("<eos>", "").replace("<pad>", "") * 2  # every byte is a scored token's
    text.write_text(plain)
    report = tmp_path / "r.json"
    proc = edgetool_in_process(
        "eval",
        bpe_converted / "model_fp32.tflite",
        "--reference",
        bpe_lm / "model",
        "--text",
        text,
        "--runs",
        "2",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    doc = json.loads(report.read_text())
    tok = load_tokenizer(read_lm_contract(bpe_lm / "model").spec, tokenizer_folder(bpe_lm / "model"))
    ids = tok.encode(plain)
    windows = -(-len(ids) // 63)  # max_len 64 with <bos> first: 63 scored ids each, every id scored
    ref = doc["reference"]["metrics"]
    assert math.isclose(ref["bits_per_byte"], math.log2(ref["perplexity"]) * len(ids) / len(text.read_bytes()))
    assert f"= {len(ids)} bpe tokens ({windows} window(s)" in doc["data"]["summary"]
    assert doc["results"][0]["metrics"]["bits_per_byte"] == pytest.approx(ref["bits_per_byte"], rel=1e-5)


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_tokenizes_and_generates_as_native_litert(bpe_converted, tmp_path):
    """demo of the converted file (tokenizer.json beside it): the page's prompt ids are the Python BPE's, its greedy
    tokens native LiteRT's, its streamed text their decoding."""
    tflite = bpe_converted / "model_fp32.tflite"
    site = tmp_path / "site"
    proc = edgetool_in_process("demo", tflite, "-o", site)
    assert proc.returncode == 0 and "bpe tokenizer" in proc.stdout, proc.stdout[-2000:]
    spec = parse_spec((bpe_converted / SPEC_NAME).read_text(), SPEC_NAME)
    tok = load_tokenizer(spec, tokenizer_folder(tflite))
    native = generate(LmSession(tflite_call(tflite), read_lm_contract(tflite)), tok.encode(PROMPT), 24, Sampler(), [1])
    _require_chromium()
    from playwright.sync_api import sync_playwright

    server, thread, url = start_server(site, "127.0.0.1", 0)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
            page = browser.new_page()
            page.goto(url)
            page.evaluate("window.edgetool.ready")
            got = page.evaluate("o => window.edgetool.generate(o)", {"prompt": PROMPT, "maxNew": 24})
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert got["promptIds"] == tok.encode(PROMPT)
    assert got["tokens"] == native and got["text"] == tok.decode(native)


@pytest.mark.slow
def test_train_ships_the_bpe_it_trained_on_the_training_split(tmp_path):
    text, out = tmp_path / "small.txt", tmp_path / "lm"
    text.write_text(bundled_text()[:20_000])
    proc = run_edgetool(
        "train",
        "--model",
        "lm",
        "--tokenizer",
        "bpe",
        "--vocab-size",
        str(VOCAB),
        "--strategy",
        "default",
        "--text",
        text,
        "--epochs",
        "1",
        "-o",
        out,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bits per byte" in proc.stdout
    spec = read_lm_contract(out).spec
    assert (spec.tokenizer, spec.vocab_size, spec.bos_id, spec.eos_id, spec.stop_ids) == ("bpe", 304, 0, 1, (1,))
    shipped = (out / "assets" / TOKENIZER_FILE).read_text()
    assert shipped == train_bpe(split_text(text.read_text())[0], VOCAB)  # the training split only, reproducibly
    tok = load_tokenizer(spec, out / "assets")
    report = json.loads((out / "train.json").read_text())
    held = (out / "heldout.txt").read_text()
    scored = tok.encode(held)[1 : 1 + 128 * ((len(tok.encode(held)) - 1) // 128)]  # the held-out windows' targets
    loss = math.log(report["eval_perplexity"])
    assert report["eval_bits_per_byte"] == pytest.approx(
        loss * len(scored) / (len(tok.decode(scored).encode()) * math.log(2)), rel=1e-6
    )
    s = report["sample"]
    again = generate(open_session(out), tok.encode(s["prompt"]), 96, Sampler(s["temperature"], s["top_k"], s["seed"]))
    assert tok.decode(again) == s["text"]
    shown = CliRunner().invoke(app, ["inspect", str(out)])
    assert shown.exit_code == 0 and "bpe (tokenizer.json checked against it)" in " ".join(shown.output.split())
    (out / "assets" / TOKENIZER_FILE).unlink()
    refused = CliRunner().invoke(app, ["inspect", str(out)])
    assert refused.exit_code == 2 and "names the bpe tokenizer but" in " ".join(refused.output.split())


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--vocab-size", "300"], "--vocab-size applies to --tokenizer bpe only"),
        (["--tokenizer", "bpe", "--vocab-size", "100"], "--vocab-size must be 259..32768"),
    ],
)
def test_tokenizer_options_are_checked_before_any_work(tmp_path, args, said):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["train", "--model", "lm", *args, "-o", str(out)])
    assert result.exit_code == 2 and said in result.output
    assert not out.exists()


def test_without_the_lm_extra_bpe_is_refused_with_the_install_line(tmp_path, monkeypatch):
    """``tokenizers`` hidden (a None entry in sys.modules is how Python spells an absent module to find_spec)."""
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["train", "--model", "lm", "--tokenizer", "bpe", "-o", str(out)])
    assert result.exit_code == 2 and "pip install 'edgetool[lm]'" in " ".join(result.output.split())
    assert not out.exists()


def test_the_spec_accepts_exactly_the_registered_tokenizers():
    assert spec_tokenizers == TOKENIZERS.names() == ("byte", "bpe")
    with pytest.raises(ValueError, match="registered twice"):
        TOKENIZERS.register(TOKENIZERS["bpe"])
