"""Turn the TFLite converter's error text into one readable line plus the edgetool option that helps.

The MLIR converter reports failures as pages of ``<unknown>:0: error: loc(callsite(fused[...] at ...)): ...``
lines, IR dumps, ``note:`` lines and advice about TensorFlow's Python API (``converter.target_spec...``,
``_experimental_lower_tensor_list_ops``). ``summarize_converter_error`` keeps the first line that says what
went wrong, without locations and API advice; ``converter_hint`` names the edgetool option that addresses it.
The full text is shown when ``EDGETOOL_VERBOSE=1``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.models.signature_choice import numeric_signature_way_out, takes_strings
from edge_tool.models.signatures import saved_model_signature
from edge_tool.trust.guard import side_effect_ops
from edge_tool.trust.side_effects import PYTHON_CALLBACK_OPS

MAX_SUMMARY_CHARS = 400

_LOCATION_PREFIX = re.compile(r"^\s*(?:<unknown>|[\w./\\-]+\.\w+)(?::\d+){1,2}:?\s*(?:(?:error|warning|remark):\s*)?")
_SEGMENT_SPLIT = re.compile(r"\n|(?=<unknown>:\d+:)")
_API_ADVICE = re.compile(
    r"[^.\n]*(?:converter\.|target_spec|TargetSpec|tf\.lite\.OpsSet|_experimental_|experimental_enable_resource_"
    r"variables|See instructions|For example|Please consider|please use|you can enable TF kernels)[^\n]*",
    re.IGNORECASE,
)
_GENERIC = (
    "could not translate mlir to flatbuffer",
    "failed while converting",
    "lowering tensor list ops is failed",
    "see current operation",
    "called from",
)
_IR_LINE = re.compile(r"^\s*(?:%|\^bb|\"|\}|\)|func\.|module)")

DYNAMIC_SHAPE_PATTERNS = (
    "element_shape to be static",
    "TensorListReserve",
    "tensor list ops",
    "requires static shape",
    "dynamic shape",
    "must have static shape",
    "unknown rank",
    "Couldn't convert tensor proto to tensor",
)


def strip_location(text: str) -> str:
    """Drop a leading ``file:line[:col]: error:`` prefix and any ``loc(...)`` blocks (balanced parentheses)."""
    text = _LOCATION_PREFIX.sub("", text)
    out, i = [], 0
    while i < len(text):
        if text.startswith("loc(", i):
            depth, j = 0, i + 3
            while j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            i = j
            while text[i : i + 1] in (":", " "):
                i += 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out).strip()


def summarize_converter_error(message: str) -> str:
    """The first line of ``message`` that says what failed, without MLIR locations, IR dumps or API advice."""
    candidates = []
    for raw in _SEGMENT_SPLIT.split(message):
        if not raw.strip() or _IR_LINE.match(raw) or re.search(r"(?:^|:\s*)note:", raw):
            continue
        line = _API_ADVICE.sub("", strip_location(raw)).strip(" .:\t")
        if line:
            candidates.append(line)
    specific = [c for c in candidates if not any(g in c.lower() for g in _GENERIC)]
    chosen = (specific or candidates or [message.strip() or "no message"])[0]
    chosen = re.sub(r"\s+", " ", chosen)
    return chosen if len(chosen) <= MAX_SUMMARY_CHARS else chosen[: MAX_SUMMARY_CHARS - 1] + "…"


def needs_fixed_batch(message: str) -> bool:
    """True when the converter failed on something a fixed input batch (``--batch``) typically resolves."""
    if "tensor<?" in message and "arith.constant" in message:  # a shape-dependent constant folded at batch "?"
        return True
    return any(p.lower() in message.lower() for p in DYNAMIC_SHAPE_PATTERNS)


TF1_REF_WAY_OUT = (
    "This is a TF1 graph on reference variables (VariableV2), which the TFLite converter cannot read: re-export it "
    "with resource variables (in the TF1 code, call tf.compat.v1.enable_resource_variables() before building the "
    "graph, then save it again); --format tfjs converts it as it is."
)


def converter_hint(message: str, batch: int | None, allow_select_tf_ops: bool, retrace: str | None = None) -> str:
    """The edgetool option most likely to get past this converter failure (a sentence, or "").

    ``retrace`` is how --batch re-traced the model (``"keras"`` or ``"signature"``), when it did.
    """
    if "must not have reference type" in message:
        return TF1_REF_WAY_OUT
    if needs_fixed_batch(message):
        if batch is None:
            return (
                "The model's input batch is dynamic (None) and the converter needs static shapes here: "
                "pass --batch 1 to re-trace the signature with a fixed batch (Keras LSTM/GRU then become "
                "TFLite's builtin sequence ops; the app feeds one sample at a time)."
            )
        if retrace == "signature":
            return (
                "--batch fixed the signature's inputs, but this SavedModel is not a Keras-2 model edgetool can "
                "re-trace layer by layer, so the shapes saved inside it (e.g. a recurrent loop's) stay dynamic: "
                "re-export it with a fixed batch (Keras 3: keras.Input(batch_size=1) before model.export()), "
                "or pass --allow-select-tf-ops to keep those ops as TF (Flex) kernels."
            )
        if not allow_select_tf_ops:
            return (
                "Even with --batch the converter cannot lower these ops to TFLite builtins; "
                "--allow-select-tf-ops keeps them as TF (Flex) kernels (the app then needs the Flex delegate)."
            )
    if re.search(r"not supported|unsupported|isn't supported|not quantizable|quantiz", message, re.IGNORECASE):
        return (
            "This quantization mode does not support an op of the model; try another --quant mode "
            "(--quant auto builds all and keeps those that convert)."
        )
    return ""


def describe_failure(
    message: str,
    batch: int | None = None,
    allow_select_tf_ops: bool = False,
    retrace: str | None = None,
    *,
    hints: bool = True,
) -> str:
    """Summary + hint (``hints``: convert's options apply), and the full converter text when EDGETOOL_VERBOSE is set."""
    parts = [summarize_converter_error(message) + "."]
    hint = converter_hint(message, batch, allow_select_tf_ops, retrace) if hints else ""
    if hint:
        parts.append(hint)
    if os.environ.get("EDGETOOL_VERBOSE", "") not in ("", "0"):  # the rule of calibration.tfenv.verbose
        parts.append("\nFull converter output:\n" + message.strip())
    else:
        parts.append("(EDGETOOL_VERBOSE=1 shows the converter's full output.)")
    return " ".join(parts)


def python_callbacks(saved_model: Path, signature: str | None = None) -> list[str]:
    """Names of the ops that call back into Python (tf.numpy_function, tf.py_function) among what running
    ``signature`` (default serving_default) executes, sorted; [] when there are none or saved_model.pb cannot be
    read. From the model-code scan (``trust``: the functions that signature reaches, read size-checked and
    cached), not a parse of its own."""
    try:
        found = side_effect_ops(Path(saved_model), signature)
    except ModelError:
        return []
    return sorted({f.op for f in found} & PYTHON_CALLBACK_OPS.keys())


# TF ops Keras preprocessing layers lower to: lookup tables (StringLookup, IntegerLookup, tf.lookup) and counts
# (CategoryEncoding, a lookup's one_hot / multi_hot output)
_TABLE_OPS = frozenset(
    {"HashTableV2", "LookupTableFindV2", "LookupTableImportV2", "LookupTableSizeV2", "MutableHashTableV2"}
)
_COUNT_OPS = frozenset({"DenseBincount", "Bincount", "SparseBincount", "RaggedBincount"})


def table_way_out(flex: list[str]) -> str:
    """The sentence a builtin-ops refusal adds when Keras preprocessing ops (lookup tables, one-hot counts) are among
    ``flex``: what TFLite's builtins take, and the way out that needs no Flex (split the preprocessing off)."""
    tables, counts = sorted(set(flex) & _TABLE_OPS), sorted(set(flex) & _COUNT_OPS)
    if not tables and not counts:
        return ""
    parts = []
    if tables:
        parts.append(
            f"{', '.join(tables)} (StringLookup/IntegerLookup, tf.lookup: TFLite's builtin HASHTABLE ops take "
            "static int64→string and string→int64 tables only)"
        )
    if counts:
        parts.append(
            f"{', '.join(counts)} (CategoryEncoding, or a lookup's one_hot/multi_hot output: no TFLite builtin)"
        )
    return (
        f" These come from Keras preprocessing layers: {'; '.join(parts)}. Without Flex: split the preprocessing off "
        "— run those layers in the app (or in TensorFlow) and convert the numeric model that takes their output, "
        "`keras.Model(features, head)` from the layer after the concatenated features (docs/models.md, 'Tabular "
        "models with preprocessing layers')."
    )


def string_way_out(shared) -> str:
    """The sentence a refusal adds when the converted signature takes strings and the SavedModel has another one
    taking numeric input (a TF-Serving export's pixel signature); "" otherwise."""
    path, key = Path(shared.saved_model), shared.signature_key
    try:
        if not takes_strings(saved_model_signature(path, key)):
            return ""
    except ModelError:
        return ""
    return numeric_signature_way_out(path, key)
