"""``--litertlm``: a converted LM packed for LiteRT-LM (litert-lm-builder 0.18) with the model's HF ``tokenizer.json``
and LlmMetadata (start/stop tokens, max tokens, sampler defaults), then loaded in LiteRT-LM's own engine
(litert-lm-api), whose greedy text must equal edgetool's greedy continuation of the same file.

LiteRT-LM 0.18 reads the sequence length from the caches' third dimension ([1, kv_heads, max_len, head_dim]).
A model exported in that layout (``cache_layout`` "bhsd" in edgetool_lm.json) is bundled as it is. One in the
default layout ([1, max_len, kv_heads, head_dim]) is wrapped: its endpoints take LiteRT-LM's layout and transpose
the caches at each call's edge (O(max_len) per call; measured: LiteRT-LM decodes ~1.7-2.4x slower, docs/lm.md), built
in the same mode as the contract file beside it; the manifest says which.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from edge_tool.errors import UsageError
from edge_tool.lm.contract import LmContract
from edge_tool.lm.spec import LmSpec

EXTRA = "pip install 'edgetool[lm]'"
LAYOUT_TRANSPOSED = "[1, kv_heads, max_len, head_dim] (LiteRT-LM's), transposed to the model's at each call's edge"
LAYOUT_NATIVE = "[1, kv_heads, max_len, head_dim] (LiteRT-LM's), the model's own (cache_layout bhsd): no transpose"
PROMPT = "The "
SEEDED_NOT_COMPARED = (
    "not compared here. litert-lm-api 0.18 gives back neither logits nor token ids, only detokenized text, and draws "
    "with its own C++ sampler; edgetool's sampler kind litert-lm (edgetool_lm.json sampler.kind, docs/lm.md "
    '"Sampling") draws the same tokens in the native interpreter and the page (tests/test_lm_sampling_litertlm.py), '
    "the default kind xorshift32 does not; greedy text is compared instead."
)
GREEDY_TOKENS = 12


def require_extra() -> None:
    """UsageError with the install line when LiteRT-LM's builder, engine or tokenizers are missing."""
    missing = [m for m in ("litert_lm_builder", "litert_lm", "tokenizers") if find_spec(m) is None]
    if missing:
        raise UsageError(f"--litertlm needs {', '.join(missing)}, which are not installed: {EXTRA}.")


def llm_metadata_text(spec: LmSpec) -> str:
    """LiteRT-LM's LlmMetadata (textproto): start/stop tokens, the context length, the sampler defaults.

    The sampler is always TOP_P (p 1.0: top-k only): litert-lm-api 0.18's CPU session refuses GREEDY and TOP_K
    ("Sampler type: 3 / 1 not implemented yet") when no SamplerConfig overrides them. Greedy is k 1; the
    ``litert-lm`` kind keeps its k at temperature 0 too, as edgetool's copy of that sampler does."""
    s = spec.sampler
    k = 1 if s.temperature == 0 and s.kind != "litert-lm" else (s.top_k or spec.vocab_size)
    sampler = f"type: TOP_P k: {k} p: 1.0"
    stops = "".join(f"stop_tokens {{ token_ids {{ ids: {i} }} }}\n" for i in spec.stop_ids)
    return (
        f"start_token {{ token_ids {{ ids: {spec.bos_id} }} }}\n{stops}max_num_tokens: {spec.max_len}\n"
        f"llm_model_type {{ generic_model {{}} }}\n"
        f"sampler_params {{ {sampler} temperature: {s.temperature} seed: {s.seed} }}\n"
    )


@contextlib.contextmanager
def _protobuf_check_off():
    """litert-lm-builder 0.18's protos are protobuf-6.31 gencode; TF 2.19 pins protobuf 5.29 (see pyproject)."""
    runtime = metadata.version("protobuf")
    key, old = (
        "TEMPORARILY_DISABLE_PROTOBUF_VERSION_CHECK",
        os.environ.get("TEMPORARILY_DISABLE_PROTOBUF_VERSION_CHECK"),
    )
    if int(runtime.split(".")[0]) < 6:
        os.environ[key] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def write_bundle(tflite: Path, spec: LmSpec, tokenizer_json: str, out: Path, work: Path) -> None:
    """Pack ``tflite`` (LiteRT-LM's cache layout) with ``tokenizer_json`` (the model's tokenizer, as HF's
    tokenizer.json: edge_tool.lm.tokenizer) and ``spec``'s metadata into ``out``."""
    with _protobuf_check_off():
        from litert_lm_builder import litertlm_builder as lb
        from litert_lm_builder import litertlm_core

    (work / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    (work / "llm_metadata.textproto").write_text(llm_metadata_text(spec), encoding="utf-8")
    builder = lb.LitertLmFileBuilder()
    builder.add_system_metadata(lb.Metadata(key="Authors", value="edgetool", dtype=lb.DType.STRING))
    builder.add_tflite_model(str(tflite), lb.TfLiteModelType.PREFILL_DECODE)
    builder.add_hf_tokenizer(str(work / "tokenizer.json"))
    builder.add_llm_metadata(str(work / "llm_metadata.textproto"))
    with litertlm_core.open_file(str(out), "wb") as f:
        builder.build(f)


def engine_greedy(bundle: Path, spec: LmSpec, prompt: str = PROMPT, tokens: int = GREEDY_TOKENS) -> str:
    """LiteRT-LM's own greedy continuation of ``prompt`` (CPU, no prompt template)."""
    import litert_lm

    litert_lm.set_min_log_severity(litert_lm.LogSeverity.ERROR)
    # its XNNPACK weight cache goes to a temp dir, not beside the bundle (the output dir holds only what convert wrote)
    with tempfile.TemporaryDirectory(prefix="edgetool-litertlm-") as cache:
        engine = litert_lm.Engine(str(bundle), max_num_tokens=spec.max_len, cache_dir=cache)
        return _greedy(litert_lm, engine, prompt, tokens)


def _greedy(litert_lm, engine, prompt: str, tokens: int) -> str:
    try:
        greedy = litert_lm.SamplerConfig(top_k=1, temperature=0.0, seed=0)
        session = engine.create_session(apply_prompt_template=False, sampler_config=greedy, max_output_tokens=tokens)
        session.run_prefill([prompt])
        return "".join(session.run_decode().texts)
    finally:
        engine.close()


def cache_transposed_saved_model(saved_model: Path, keys: tuple[str, ...], contract: LmContract, out: Path) -> None:
    """A SavedModel whose ``keys`` call ``saved_model``'s with every cache in LiteRT-LM's layout (see module doc)."""
    import tensorflow as tf

    loaded = tf.saved_model.load(str(saved_model))
    c = contract
    names = [f"kv_cache_{k}_{i}" for i in range(c.num_layers) for k in "kv"]
    module = tf.Module()
    module.source = loaded
    signatures = {}
    for key in keys:
        fn = loaded.signatures[key]
        t = fn.structured_input_signature[1]["tokens"].shape[1]
        specs = [tf.TensorSpec([1, t], tf.int32, name="tokens"), tf.TensorSpec([t], tf.int32, name="input_pos")]
        specs += [tf.TensorSpec([1, c.num_kv_heads, c.max_len, c.head_dim], tf.float32, name=n) for n in names]
        signatures[key] = _wrapped(tf, fn, specs, names).get_concrete_function()
    tf.saved_model.save(module, str(out), signatures=signatures)


def _wrapped(tf, fn, specs, names):
    @tf.function(input_signature=specs)
    def endpoint(*args):
        caches = {n: tf.transpose(a, [0, 2, 1, 3]) for n, a in zip(names, args[2:])}
        out = fn(tokens=args[0], input_pos=args[1], **caches)
        return {"logits": out["logits"], **{n: tf.transpose(out[n], [0, 2, 1, 3]) for n in names}}

    return endpoint
