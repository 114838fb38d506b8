"""``convert_lm``: a contract LM SavedModel → one multi-signature .tflite per LM mode, each self-checked (chunked prefill
+ decode against the SavedModel), ``edgetool_lm.json`` beside them and manifest.json, written atomically."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import platform
import time
from pathlib import Path

from edge_tool import __version__
from edge_tool.convert.api import ConvertResult, one_line
from edge_tool.convert.formats.registry import artifact_name
from edge_tool.convert.manifest import library_versions, write_manifest
from edge_tool.core.env import installed_version, quiet_native_stderr
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError, EdgeToolError, ModelError
from edge_tool.lm.contract import DECODE, LmContract, read_lm_contract
from edge_tool.lm.keras_hub import is_hub_lm
from edge_tool.lm.spec import SPEC_NAME, LmSpec
from edge_tool.lm.tokenizer.registry import TOKENIZER_FILE, TOKENIZERS, load_tokenizer, tokenizer_folder
from edge_tool.lm_converter.auto import choose
from edge_tool.lm_converter.build import LmBuilt, build_mode
from edge_tool.lm_converter.bundle import bundle_all
from edge_tool.lm_converter.config import LmConvertConfig, memory_problem, plan_lengths
from edge_tool.lm_converter.hub import export_hub_source
from edge_tool.lm_converter.litertlm import require_extra
from edge_tool.lm_converter.modes import LM_MODES
from edge_tool.lm_converter.selfcheck import DECODE_STEPS, Probe, check_file, reference_probe
from edge_tool.models.signatures import saved_model_signatures
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.parsers.tree import content_hash
from edge_tool.schemas.convert_options import ConvertOptions
from edge_tool.schemas.format_records import LmArtifact, LmSelfCheck
from edge_tool.schemas.manifest import SCHEMA, Manifest, ManifestArtifact
from edge_tool.schemas.records import SourceRecord, ToolInfo
from edge_tool.tflite_quantizer.facts import weight_facts

QUANTIZER_LIBS = ("ai-edge-quantizer",)


def lm_spec(contract: LmContract, lengths: tuple[int, ...]) -> LmSpec:
    """The model's ``edgetool_lm.json`` (a byte tokenizer assumed when it has none) for the lengths converted."""
    return dataclasses.replace(contract.described(), prefill_lengths=lengths)


def convert_lm(config: LmConvertConfig) -> ConvertResult:
    """Build every mode of ``config`` (see the module doc); a mode that fails is recorded with --keep-going. A
    Keras-Hub ``.keras`` source is first exported to its contract SavedModel ``<stem>/`` beside the files."""
    check_output_dir(config.output_dir, config.force, config.inputs)
    if config.litertlm:
        require_extra()
    hub = is_hub_lm(config.model)
    if not hub and not (config.model / "saved_model.pb").is_file():
        raise ModelError(
            f"convert --task lm takes a contract SavedModel directory or a Keras-Hub CausalLM .keras file; "
            f"{config.model} is neither. Export the endpoints with edge_tool.lm.export (or edgetool train --model "
            "lm), then convert that directory."
        )
    t0 = time.perf_counter()
    with quiet_native_stderr(), atomic_dir(config.output_dir, config.force, config.inputs) as tmp:
        source, probe = config.model, None
        if hub:
            source = tmp / Path(config.model).stem
            with step("export: Keras-Hub model → prefill/decode SavedModel, checked against its own forward pass"):
                probe = export_hub_source(config.model, source, config.max_len, config.prefill_lengths, config.seed)
        run = dataclasses.replace(config, model=source)
        contract = read_lm_contract(source)
        lengths = plan_lengths(run, contract)
        if problem := memory_problem(run, contract):
            raise ConversionError(problem)
        spec = lm_spec(contract, lengths)
        tokenizer = load_tokenizer(spec, tokenizer_folder(source))  # a BPE model without its file: refused here
        keys = (*(contract.prefill_key(t) for t in lengths), DECODE)
        if probe is None:
            with step("reference: chunked prefill + decode in TensorFlow"):
                probe = reference_probe(source, contract, config.seed)
        built, failed = _build_all(run, contract, keys, probe, tmp)
        if config.litertlm:
            built, more = bundle_all(run, contract, spec, tokenizer, keys, built, tmp)
            failed.update(more)
        if config.litertlm or TOKENIZERS[spec.tokenizer].ships_file:  # beside the .tflite files, as the page reads it
            (tmp / TOKENIZER_FILE).write_text(tokenizer.hf_json(), encoding="utf-8")
        choice = None
        if config.auto:
            built, choice = choose(built, tmp, contract, tokenizer, config.text, config.max_drop)
        (tmp / SPEC_NAME).write_text(spec.to_json(), encoding="utf-8")
        manifest = _manifest(config, source, spec, built, failed, round(time.perf_counter() - t0, 3), choice)
        write_manifest(tmp, manifest)
    return ConvertResult(config.output_dir, manifest, dict(failed))


def _build_all(config, contract, keys, probe: Probe, out: Path) -> tuple[list[ManifestArtifact], dict]:
    built, failed, fp32 = [], {}, None
    order = sorted(config.modes, key=lambda m: LM_MODES[m].recipe is not None)  # the fp32 file first
    if "fp32" not in order and any(LM_MODES[m].recipe for m in order):
        order = ["fp32", *order]  # the quantizer's input, built (and checked) but only written when asked
    for mode in order:
        try:
            entry, data = _one(config, contract, keys, probe, out, mode, fp32)
        except EdgeToolError as exc:
            if not config.keep_going or mode == "fp32" and len(order) == 1:
                raise
            failed[mode] = one_line(str(exc))
            console.print(f"[red]✗[/] convert {mode}: {term(failed[mode])}")
            continue
        if mode == "fp32":
            fp32 = data
        if mode in config.modes:
            built.append(entry)
        else:
            (out / entry.path).unlink()
    if not built:
        raise ConversionError("no mode could be built: " + "; ".join(f"{m}: {w}" for m, w in failed.items()))
    base = next((a.size_bytes for a in built if a.quant == "fp32"), len(fp32) if fp32 else None)
    return [_with_ratio(a, base) for a in built], failed


def _one(config, contract, keys, probe, out: Path, mode: str, fp32: bytes | None):
    spec = LM_MODES[mode]
    if spec.recipe is not None and fp32 is None:
        raise ConversionError(f"{mode} quantizes the fp32 file, which could not be built (see fp32).")
    t0 = time.perf_counter()
    with step(f"convert {mode}"):
        made: LmBuilt = build_mode(mode, config.model, keys, fp32, contract.vocab_size)
    name = artifact_name(config.model, mode, ".tflite")
    path = out / name
    path.write_bytes(made.data)
    if problem := memory_problem(config, contract, len(made.data)):
        raise ConversionError(problem)
    with step(f"self-check {mode}: chunked prefill + {DECODE_STEPS} decode steps"):
        check = check_file(path, contract, probe, spec.tolerance)
    record = LmSelfCheck(
        probe.prompt,
        DECODE_STEPS,
        check.prefill_drift,
        check.decode_drift,
        round(check.argmax_agreement, 4),
        check.tolerance,
        check.ok,
        check.problem,
    )
    if not check.ok:
        raise ConversionError(
            f"{name} failed its self-check against the SavedModel ({check.problem}); it is not written. "
            "A broken cache or NaN is a converter/quantizer problem with this model: try another --quant mode."
        )
    for note in made.notes:
        console.print(f"[yellow]note:[/] {term(name)}: {term(note)}")
    summary = summarize_tflite(made.data)
    lm = LmArtifact(
        signatures=keys,
        cache_shape=contract.cache_shape(),
        cache_dtype=contract.cache_dtype,
        cache_bytes=contract.cache_bytes,
        size_ratio=None,
        quantized_ops=_new_integer_ops(made.quantized_ops, fp32 if fp32 is not None else made.data),
        float_ops=dict(sorted(made.float_ops.items())),
        self_check=record,
        notes=made.notes,
        quantizer=made.quantizer,
    )
    entry = ManifestArtifact(
        name,
        "tflite",
        mode,
        len(made.data),
        content_hash(path),
        seconds=round(time.perf_counter() - t0, 3),
        tensors=summary,
        lm=lm,
    )
    return entry, made.data


def _new_integer_ops(ops: dict, fp32: bytes) -> dict:
    """``ops`` less the integer constants the fp32 file already had (index tables such as the causal mask's)."""
    base = weight_facts(fp32).quantized_ops
    return {op: n - base.get(op, 0) for op, n in sorted(ops.items()) if n > base.get(op, 0)}


def _with_ratio(entry: ManifestArtifact, base: int | None) -> ManifestArtifact:
    ratio = round(entry.size_bytes / base, 4) if base else None
    return dataclasses.replace(entry, lm=dataclasses.replace(entry.lm, size_ratio=ratio))


def _source(model: Path, saved_model: Path) -> SourceRecord:
    decode = next(s for s in saved_model_signatures(saved_model) if s.key == DECODE)
    if model != saved_model:  # a Keras-Hub .keras file, exported to saved_model
        return SourceRecord(str(model), "keras-file", "keras-hub", content_hash(model), decode, None)
    return SourceRecord(str(model), "saved_model", "tf-saved-model", content_hash(model), decode, None)


def _manifest(
    config, saved_model: Path, spec: LmSpec, built, failed: dict, total: float, choice: dict | None
) -> Manifest:
    timings = {a.quant: a.seconds for a in built}
    timings["total"] = total
    versions = {"python": platform.python_version(), **library_versions(())}
    versions.update({lib: installed_version(lib) for lib in QUANTIZER_LIBS})
    return Manifest(
        schema=SCHEMA,
        tool=ToolInfo("edgetool", __version__),
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        source=_source(config.model, saved_model),
        options=_options(config),
        calibration=None,
        artifacts=tuple(built),
        versions=versions,
        timings_s=timings,
        failed=failed or None,
        lm=spec.to_dict(),
        lm_choice=choice,
        lm_options={k: v for k, v in config.to_dict().items() if k not in _SHARED},
    )


_SHARED = {f.name for f in dataclasses.fields(ConvertOptions)}


def _options(config) -> ConvertOptions:
    """The options every manifest carries (the rest of an LM run's are ``lm_options``)."""
    shared = {k: v for k, v in config.to_dict().items() if k in _SHARED}
    return ConvertOptions.from_dict(shared)
