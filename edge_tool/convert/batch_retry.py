"""A dynamic-batch .tflite that LiteRT refuses is built again with the input batch fixed to 1, as ``--batch 1`` does.

TensorFlow (seen on 2.19) converts some models with a free batch dimension into files whose kernels fail LiteRT's prepare
check at any batch (GroupNormalization: its reshape to ``[batch, H, W, groups, C/groups]`` becomes a
``BROADCAST_TO`` whose output shape is computed at batch -1). Re-traced with a fixed batch the same model
converts exactly. So when the run-check refuses such a file (LiteRT raised; a crash is a kernel bug a batch does
not fix), or the calibrator's LiteRT run of it fails a kernel's check (int8, int16x8), or the converter leaves ops
it could not express as builtins (a ``StridedSlice`` adding an axis at the free shapes of an STFT front end: at
batch 1 it lowers), and the user fixed no batch, convert builds the mode again from a batch-1 re-trace, says so, and records
it in the artefact's manifest entry (``fixed_batch``). When that fails too, the original refusal stands, noting
that ``--batch 1`` did not help.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

from edge_tool.convert.config import QuantMode
from edge_tool.convert.context import BuildContext
from edge_tool.convert.smoke import LiteRTRefused
from edge_tool.convert.source import prepare_source
from edge_tool.core.steps import console
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError, EdgeToolError
from edge_tool.schemas.manifest import ManifestArtifact
from edge_tool.schemas.records import BatchNote
from edge_tool.tflite_converter.run import OpsNotBuiltin

BATCH = 1
# the calibrator runs the float file in LiteRT: a kernel refusing it there fails the conversion with LiteRT's words
_KERNEL_FAILED = re.compile(r"Node number \d+ \(\w+\) failed to (?:prepare|invoke)")


class BatchRetry:
    """Builds modes again from one lazily prepared batch-1 re-trace of the source."""

    def __init__(self, ctx: BuildContext, work: Path):
        self.ctx = ctx
        self.work = Path(work)
        self._fixed: BuildContext | None = None

    def run(self, mode: QuantMode, build: Callable[[BuildContext], ManifestArtifact]) -> ManifestArtifact:
        """``build(context)``, and once more from the batch-1 re-trace when LiteRT refuses the free-batch file."""
        try:
            return build(self.ctx)
        except EdgeToolError as exc:
            if not self.applies(mode, exc):
                raise
            return self.build(mode, exc, build)

    def applies(self, mode: QuantMode, exc: EdgeToolError) -> bool:
        """True when ``exc`` is LiteRT refusing a file of a model whose batch is free and was not fixed by the user
        (QAT retries inside its builder, which converts twice: ``inside``)."""
        return mode is not QuantMode.QAT and fixed_batch_may_help(self.ctx, exc)

    def inside(self, what: str, build: Callable[[BuildContext], bytes]) -> tuple[bytes, dict | None]:
        """For a builder converting more than once (QAT: the fine-tuned model, and int8 PTQ to compare it with):
        ``build(context)``, and once more from the batch-1 re-trace when LiteRT refuses the free-batch file.
        Returns (the file, its ``fixed_batch`` note or None); a failure at batch 1 too raises the first refusal,
        noting that ``--batch 1`` did not help."""
        try:
            return build(self.ctx), None
        except EdgeToolError as exc:
            if not fixed_batch_may_help(self.ctx, exc):
                raise
            try:
                data = build(self._context())
            except EdgeToolError as again:
                raise ConversionError(f"{exc} {_no_help(again)}") from None
            why = " ".join(str(exc).split())
            fails = "does not convert to builtin ops" if isinstance(exc, OpsNotBuiltin) else "does not run in LiteRT"
            console.print(
                f"[yellow]note:[/] {term(what)} with a free input batch {fails} "
                f"({term(_reason(why))}); built again with the input batch fixed to {BATCH} (as --batch {BATCH} "
                "does), which runs: it takes one sample at a time."
            )
            return data, {"batch": BATCH, "reason": why}

    def build(
        self, mode: QuantMode, exc: EdgeToolError, build: Callable[[BuildContext], ManifestArtifact]
    ) -> ManifestArtifact:
        """``build(batch-1 context)`` with the note said and recorded; raises ``exc`` (noting the try) when it fails."""
        try:
            entry = build(self._context())
        except EdgeToolError as again:
            raise ConversionError(f"{exc} {_no_help(again)}") from None
        why = " ".join(str(exc).split())
        entry = dataclasses.replace(entry, fixed_batch=BatchNote(BATCH, why))
        fails = "does not convert to builtin ops" if isinstance(exc, OpsNotBuiltin) else "does not run in LiteRT"
        console.print(
            f"[yellow]note:[/] {term(mode.value)} with a free input batch {fails} "
            f"({term(_reason(why))}); built again with the input batch fixed to {BATCH} (as --batch "
            f"{BATCH} does), which runs: {term(entry.path)} takes one sample at a time."
        )
        return entry

    def _context(self) -> BuildContext:
        if self._fixed is None:
            config = self.ctx.config  # qat's own model (and its --eval-data) is not re-traced: only its PTQ twin
            modes = tuple(m for m in config.modes if m is not QuantMode.QAT) or (QuantMode.INT8,)
            config = dataclasses.replace(config, batch=BATCH, modes=modes, eval_data=None)
            source = prepare_source(
                config.model, self.work / "fixed-batch", BATCH, config.trust_model_code, config.signature
            )
            self._fixed = dataclasses.replace(
                self.ctx, config=config, source=source, shared=None, notes={}, _reference=None
            )
        return self._fixed


def fixed_batch_may_help(ctx: BuildContext, exc: EdgeToolError) -> bool:
    """True when ``exc`` is LiteRT refusing a file of a model whose batch is free and was not fixed by the user."""
    free_batch = any(t.shape and t.shape[0] is None for t in ctx.source.signature.inputs)
    refused = isinstance(exc, (LiteRTRefused, OpsNotBuiltin)) or (
        isinstance(exc, ConversionError) and _KERNEL_FAILED.search(str(exc))
    )
    return bool(refused and free_batch and ctx.config.batch is None)


def _no_help(again: EdgeToolError) -> str:
    return (
        f"Fixing the input batch to {BATCH} (as --batch {BATCH} does) does not help either: "
        f"{' '.join(str(again).split())}"
    )


def _reason(message: str) -> str:
    """LiteRT's words inside a refusal: the kernel and its check, else the whole message."""
    found = _KERNEL_WORDS.search(message)
    return "LiteRT: " + found.group(0) if found else message


_KERNEL_WORDS = re.compile(r"\S*kernels/\S+ [^()]*?Node number \d+ \(\w+\) failed to (?:prepare|invoke)")
