"""How --format tflite builds: the mode registry's .tflite of one --quant mode, metadata embedded, checked in
LiteRT against the SavedModel, and its manifest entry (loaded by ``formats.tflite`` when a conversion runs: its
helpers are numpy-backed, and ``--help`` reads the registry)."""

from __future__ import annotations

from pathlib import Path

from edge_tool.convert import fidelity
from edge_tool.convert.file_kind import file_warnings
from edge_tool.convert.formats.entry import file_entry
from edge_tool.convert.formats.registry import FormatJob, FormatSpec, artifact_name
from edge_tool.convert.metadata_step import for_mode
from edge_tool.convert.modes import MODES, QuantMode
from edge_tool.convert.smoke import open_shape_sample, refuse_if_it_kills_litert
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term
from edge_tool.metadata.writer import embed_metadata
from edge_tool.models.probes import PROBES, STREAM_CALLS, probe_feeds
from edge_tool.parsers.limits import check_tflite_tensors
from edge_tool.parsers.tflite_model import state_warning, summarize_tflite
from edge_tool.parsers.tflite_state import STREAM, read_state, state_line
from edge_tool.schemas.format_records import QuantizerNote
from edge_tool.schemas.manifest import ManifestArtifact
from edge_tool.schemas.records import BatchNote


def tflite_name(source: Path, mode: QuantMode) -> str:
    """File name of a mode's artefact: ``<model stem>_<mode>.tflite``."""
    return artifact_name(source, mode.value, ".tflite")


def build(job: FormatJob, mode: QuantMode, spec: FormatSpec) -> ManifestArtifact:
    """The .tflite of ``mode``; built once more from a batch-1 re-trace when LiteRT refuses the free-batch file."""
    return job.retry.run(mode, lambda ctx: _build(ctx, mode, job.out_dir, spec.name))


def _build(ctx, mode: QuantMode, out_dir: Path, fmt: str) -> ManifestArtifact:
    path = out_dir / tflite_name(ctx.config.model, mode)
    spec = None if ctx.metadata is None else for_mode(ctx.metadata, mode.value, ctx.source.flavor)
    with step(f"convert {mode.value}") as timed:
        data = MODES[mode].build(ctx)
        if spec is not None:
            data = embed_metadata(data, spec)
        summary = summarize_tflite(data)
        check_tflite_tensors(data, path.name)  # before LiteRT allocates its arena in the smoke child
        state = read_state(data)
        check, skipped = _self_check(ctx, mode, data, state)  # Flex files too: run where TensorFlow links the delegate
        path.write_bytes(data)
        timed.outputs.append(path)
    if check is not None and not check.ok:
        console.print(f"[yellow]warning:[/] {term(check.warning(path.name, mode.value))}")
    if skipped is not None and fidelity.tolerance(mode.value) is not None:
        console.print(f"[yellow]note:[/] {term(path.name)} was not self-checked: {term(skipped)}")
    for warning in file_warnings(path.name, mode.value, data, summary):
        console.print(f"[yellow]warning:[/] {term(warning)}")
    advice = state_line(state) if state else state_warning(summary.variable_tensors)
    if state and check:
        advice += f" Self-check: {STREAM.format(calls=check.samples)}; max abs error {check.max_abs_error:.3g}."
    if advice:
        console.print(f"[yellow]{'note' if state else 'warning'}:[/] {term(path.name)} {term(advice)}")
    return file_entry(
        path,
        fmt,
        mode.value,
        data,
        timed.seconds,
        tensors=summary,
        state_warning=advice,
        state=state,
        metadata=None if spec is None else spec.record(),
        self_check=check or None,
        self_check_skipped=skipped,
        **_notes(ctx, mode),
    )


def _self_check(ctx, mode: QuantMode, data: bytes, state):
    """(the file's ``SelfCheck`` against the SavedModel, or None; why it was not self-checked, or None). Every file
    is run once in LiteRT first (``smoke``: a file that kills or fails it is refused); a float mode's file is also
    compared on seeded probes — with resource-variable ``state``, one stream of calls compared call by call."""
    float_mode = fidelity.tolerance(mode) is not None
    stream = state is not None
    probes = probe_feeds(ctx.source.signature, count=STREAM_CALLS if stream else PROBES) if float_mode else None
    sample = open_shape_sample(ctx.source.signature, ctx.representative_dataset)
    got = refuse_if_it_kills_litert(data, mode.value, probes, sample, stream=stream)
    if not float_mode:
        return None, fidelity.QUANTIZED_SKIP
    if probes is None:
        return None, "no seeded random input fits its signature (a string input, or a non-batch size left open)"
    if got is None:
        return None, "LiteRT did not run the seeded probes (an input size it could not take, or a custom op)"
    check = fidelity.check(ctx, mode.value, probes, got, stream=stream)
    if check is None:
        return None, "the SavedModel refused the seeded random inputs, or no float output could be compared"
    return check, None


def _notes(ctx, mode) -> dict:
    """The mode's notes for its entry (e.g. qat: which model was shipped and why); a ``fixed_batch`` among them (QAT
    built at batch 1) becomes the entry's own ``fixed_batch``."""
    if mode.value not in ctx.notes:
        return {}
    note = ctx.notes.pop(mode.value)  # a typed note (int16x8, ai-edge-quantizer's) or QAT's free-form dict
    if isinstance(note, QuantizerNote):
        return {"quantizer": note}
    fixed = note.pop("fixed_batch", None) if isinstance(note, dict) else None
    return {mode.value: note, **({"fixed_batch": BatchNote(**fixed)} if fixed else {})}
