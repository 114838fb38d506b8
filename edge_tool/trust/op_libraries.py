"""Ops of an op library (tensorflow-text's tokenizers, tensorflow-io, Addons…) in a SavedModel, found in its graph
before any loader runs: TensorFlow can neither load nor run them until the library's native code is loaded, which
edgetool does not do (a library is code). Each is mapped to the package that defines it and to whether TFLite can
run it: as a custom op whose kernel the package provides for the app's interpreter, or never."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.core.env import installed_version
from edge_tool.parsers.saved_model_proto import parse_saved_model


@dataclass(frozen=True)
class OpLibrary:
    """A package of TensorFlow ops: its namespaces (``TFText>``), its ops without one, and those with TFLite kernels."""

    package: str
    namespaces: tuple[str, ...]
    names: frozenset[str] = frozenset()
    tflite_ops: frozenset[str] = frozenset()  # bare op names the package's TFLite registrar provides kernels for
    tflite_how: str = ""

    def owns(self, op: str) -> bool:
        """True when ``op`` is one of this library's."""
        return op.startswith(self.namespaces) or op in self.names

    def runs_in_tflite(self, op: str) -> bool:
        """True when the package ships a TFLite kernel for ``op`` (its namespace dropped)."""
        return op.split(">", 1)[-1] in self.tflite_ops


# tensorflow-text 2.19: the ops its tflite_registrar registers (read from the library), and its older unprefixed ops
TF_TEXT = OpLibrary(
    "tensorflow-text",
    ("TFText>", "TFSentencepiece>"),
    frozenset(
        {
            "CaseFoldUTF8",
            "NormalizeUTF8",
            "NormalizeUTF8WithOffsetsMap",
            "FindSourceOffsets",
            "WhitespaceTokenizeWithOffsets",
            "WordpieceTokenizeWithOffsets",
            "RegexSplitWithOffsets",
            "UnicodeScriptTokenizeWithOffsets",
            "SplitMergeTokenizeWithOffsets",
            "SplitMergeFromLogitsTokenizeWithOffsets",
            "SentencepieceOp",
            "SentencepieceTokenizeOp",
            "SentencepieceTokenizeWithOffsetsOp",
            "SentencepieceDetokenizeOp",
            "SentencepieceIdToStringOp",
            "SentencepieceStringToIdOp",
            "SentencepieceVocabSizeOp",
            "ConstrainedSequence",
            "MaxSpanningTree",
            "SentenceFragments",
            "SentenceFragmentsV2",
            "MitieTokenizeWithOffsets",
        }
    ),
    frozenset(
        {
            "ByteSplitWithOffsets",
            "ByteSplitByOffsets",
            "FastBertNormalize",
            "FastSentencepieceTokenize",
            "FastSentencepieceDetokenize",
            "FastWordpieceTokenizeWithOffsets",
            "FastWordpieceDetokenize",
            "NgramsStringJoin",
            "RoundRobinGenerateMasks",
            "RoundRobinTrim",
            "Utf8Binarize",
            "WhitespaceTokenizeWithOffsetsV2",
        }
    ),
    "tensorflow_text's TFLite kernels, registered in the app's interpreter (tensorflow_text.tflite_registrar; the "
    "converter keeps them with allow_custom_ops)",
)
LIBRARIES = (
    TF_TEXT,
    OpLibrary("tensorflow-io", ("IO>",)),
    OpLibrary("tensorflow-addons", ("Addons>",)),
    OpLibrary("tensorflow-recommenders-addons", ("TFRA>",)),
    OpLibrary("tensorflow-decision-forests", ("SimpleML",)),
)


def library_ops(saved_model: Path) -> dict[str, list[str]]:
    """Package name (``"unknown"`` for a namespaced op no table names) -> its ops in the SavedModel's graph and
    functions, sorted; {} for a graph of TensorFlow's own ops. ModelError for a malformed protobuf."""
    sm = parse_saved_model(Path(saved_model), "; edgetool reads it before running anything.")
    ops = set()
    for mg in sm.meta_graphs:
        ops.update(n.op for n in mg.graph_def.node)
        ops.update(n.op for fn in mg.graph_def.library.function for n in fn.node_def)
    found: dict[str, set] = {}
    for op in ops:
        lib = next((lib for lib in LIBRARIES if lib.owns(op)), None)
        if lib is not None or ">" in op:  # core TensorFlow ops never carry a namespace
            found.setdefault(lib.package if lib else "unknown", set()).add(op)
    return {k: sorted(v) for k, v in sorted(found.items())}


def _pip(package: str) -> str:
    tf = installed_version("tensorflow") or ""
    minor = ".".join(tf.split(".")[:2])
    return f"pip install '{package}=={minor}.*'" if minor and package == "tensorflow-text" else f"pip install {package}"


def op_library_refusal(model: Path, found: dict[str, list[str]]) -> str:
    """One paragraph: which ops of which library the model holds, the package that defines them (matching this
    TensorFlow), which TFLite can run as custom ops and which never, and the way out."""
    parts = []
    for package, ops in found.items():
        lib = next((lib for lib in LIBRARIES if lib.package == package), None)
        if lib is None:
            parts.append(f"{', '.join(ops)} (an op library edgetool does not know: its namespace names it)")
            continue
        custom = [op for op in ops if lib.runs_in_tflite(op)]
        never = [op for op in ops if op not in custom]
        said = f"{', '.join(ops)} from {package} ({_pip(package)} defines them in Python)"
        if custom:
            said += f"; TFLite runs {', '.join(custom)} as custom ops through {lib.tflite_how}"
        if never:
            said += (
                f"; {', '.join(never)} never run{'s' if len(never) == 1 else ''} in TFLite (no kernel, Flex has none)"
            )
        parts.append(said)
    return (
        f"{model} holds ops of an op library that TensorFlow has not loaded: {'; '.join(parts)}. TensorFlow cannot "
        "load or run the graph without the library's native code, and edgetool does not load op libraries (they are "
        "code). The way out: keep the text preprocessing outside the model — export the numeric part as its own "
        "signature (token ids in, scores out), convert that, and tokenize in the app (with the TFLite kernels named "
        "above where they exist)."
    )
