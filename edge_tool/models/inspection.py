"""What a SavedModel directory or .tflite file takes and gives, how big it is, and where it came from.

``inspect_model(path).to_dict()`` (what ``edgetool inspect --json`` prints) has these keys:

- ``path`` (str), ``format``: ``"saved_model"`` | ``"tflite"``, ``size_bytes`` (int; whole dir for a SavedModel)
- ``signatures``: list of ``{"key", "inputs": [{"name", "dtype", "shape"}], "outputs": [...]}``; shapes use
  ``null`` for unknown dims. SavedModel: every callable signature (``serving_default`` is required, except of a
  language model, which has ``decode`` and ``prefill_<T>``: docs/lm.md); tflite: every signature, sorted by key (or
  ``key: ""`` with raw input/output details if it has none).
- ``parameters``: ``{"total", "trainable", "non_trainable", "by_dtype": {dtype: elements}}``. SavedModel:
  element counts of the model's variables from the object graph (the root's ``variables`` list when it
  has one, so Keras metric counters are not counted); tflite: elements of constant (weight) tensors, with
  ``trainable``/``non_trainable`` null and ``by_dtype`` showing quantization (e.g. int8 vs float32).
- ``keras``: ``{"flavor", "reloadable_as_keras", "note"}``; flavor is ``"keras2"`` (tf_keras ``model.save``),
  ``"keras3-export"`` (Keras 3 ``model.export()``), ``"tf-saved-model"`` (plain ``tf.saved_model.save``) or
  null for tflite. ``reloadable_as_keras`` is the result of really calling ``tf_keras.models.load_model``
  and getting a ``tf_keras.Model`` back (null for tflite, and null when it was not tried: the model carries code
  and ``--trust-model-code`` was not given).
- ``model_code``: ``{"python": [{"layer", "kind", "where"}], "side_effect_ops": [{"op", "effect", "where"}],
  "trusted": bool}``: Python code in the Keras config and ops with effects outside tensors (Flex ops of a tflite),
  found by reading the files (``edge_tool.trust``, docs/security.md); nothing of the model runs unless
  ``trusted`` (``--trust-model-code``) or both lists are empty.
- ``distribution`` (SavedModel only, else null): ``{"variable_synchronization": {"AUTO"|"ON_WRITE"|"ON_READ"|"NONE": n},
  "device_jobs": [job names pinned in the graphs, e.g. "worker"], "loaded_variable_classes": {class: n},
  "traces": [human-readable conclusions]}``. Mirrored strategies save trainable variables with
  synchronization ON_WRITE (MirroredVariable); without a strategy they stay AUTO.
- ``training``: the ``train.json`` sidecar's ``strategy``, ``num_replicas`` and ``eval_accuracy`` when present, else null.
- ``tflite`` (tflite only, else null): ``{"ops": {op: n}, "weight_dtypes": {dtype: tensors},
  "activation_dtypes": {dtype: tensors}, "variable_tensors": n, "state_warning": str | null, "metadata"}``; variable
  tensors hold state across invocations (recurrent h/c of a fixed-batch LSTM): the warning says to call
  ``reset_all_variables()`` between independent samples. ``state`` (null when none): the resource variables a
  Keras ``stateful=True`` layer writes on each call, ``{"variables": [{"name", "shape", "dtype", "bytes"}], "bytes",
  "reset"}`` (docs/streaming.md); then the warning says how an app starts a new stream. ``metadata`` is null without embedded TFLite model
  metadata, else ``{"name", "description", "version", "author", "min_parser_version", "inputs"/"outputs": [{"name",
  "description", "content", "normalization": {"mean", "std"} | null, "labels_file"}], "packed_files",
  "label_count", "labels", "problems"}`` (see docs/metadata.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.safe_open import open_regular
from edge_tool.calibration.serial import Record
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.metadata.reader import read_metadata
from edge_tool.models.saved_model_facts import ParamCount, distribution, model_variables, param_count, training_sidecar
from edge_tool.models.signatures import (
    SERVING,
    SignatureInfo,
    flatbuffer_signature,
    read_meta_graph,
    saved_model_flavor,
    saved_model_signature,
    tflite_signature,
    tflite_signatures,
)
from edge_tool.parsers.limits import read_tflite
from edge_tool.parsers.tflite_model import state_warning, summarize_tflite
from edge_tool.parsers.tflite_schema import enum_names, is_constant, tflite_schema
from edge_tool.parsers.tflite_state import read_state, state_line
from edge_tool.parsers.tree import tree_bytes
from edge_tool.trust.guard import code_report
from edge_tool.trust.keras_reload import keras_reloadability

TFLITE_MAGIC = b"TFL3"


@dataclass(frozen=True)
class InspectReport(Record):
    """Everything ``edgetool inspect`` reports about one model; ``to_dict`` has the keys the module docstring lists."""

    path: Path
    format: str
    size_bytes: int
    signatures: tuple[SignatureInfo, ...]
    parameters: ParamCount
    keras: dict | None = None
    distribution: dict | None = None
    training: dict | None = None
    tflite: dict | None = None
    model_code: dict | None = None


def inspect_model(path: Path, trust_model_code: bool = False) -> InspectReport:
    """Inspect a SavedModel directory or a .tflite file; ModelError (exit 2) for anything else. A model that carries
    code (``model_code``) is only read, never loaded, unless ``trust_model_code``."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"Expected a SavedModel directory or a .tflite file at {path}, but nothing is there.")
    if path.is_dir():
        return inspect_saved_model(path, trust_model_code)
    with open_regular(path, "a SavedModel directory or a .tflite file", ModelError) as f:
        head = f.read(8)
    if len(head) < 8 or head[4:8] != TFLITE_MAGIC:
        raise ModelError(
            f"{path} is not a TFLite flatbuffer (expected the 'TFL3' identifier at byte 4, found {head[4:8]!r}). "
            f"Pass a SavedModel directory or a .tflite file written by a TFLite converter."
        )
    return inspect_tflite(path, trust_model_code)


def _dir_size(path: Path) -> int:
    return tree_bytes(path)


def _meta_graph(path: Path):
    """The first MetaGraphDef of the SavedModel at ``path`` (ModelError if it is not one)."""
    return read_meta_graph(path)


def _all_signatures(path: Path, mg) -> tuple[SignatureInfo, ...]:
    keys = sorted(k for k in mg.signature_def if not k.startswith("__"))
    keys.sort(key=lambda k: k != SERVING)
    return tuple(saved_model_signature(path, k) for k in keys)


def inspect_saved_model(path: Path, trust_model_code: bool = False) -> InspectReport:
    """Signatures, parameter count, Keras flavour/reloadability, strategy traces and code found of a SavedModel dir
    (loaded with TensorFlow only when it carries no code, or ``trust_model_code``)."""
    path = Path(path)
    mg = _meta_graph(path)
    if not any(k == "decode" or k.startswith("prefill") for k in mg.signature_def):  # an LM has those (docs/lm.md)
        saved_model_signature(path, SERVING)  # ModelError (exit 2) when there is no serving signature
    signatures = _all_signatures(path, mg)
    variables = model_variables(mg)
    code = code_report(path, trust_model_code)
    loaded_classes = {}
    # loading runs restore and resource-init functions; ops of an op library TensorFlow has not loaded cannot load
    if (trust_model_code or not code["side_effect_ops"]) and not code.get("op_libraries"):
        tf = import_tf()
        try:
            loaded = tf.saved_model.load(str(path))
        except Exception as exc:  # a corrupt or incompatible SavedModel: say so instead of a traceback
            raise ModelError(f"tf.saved_model.load could not load {path}: {type(exc).__name__}: {exc}") from None
        loaded_classes = dict(Counter(type(v).__name__ for v in getattr(loaded, "variables", [])))
    flavor = saved_model_flavor(path)
    return InspectReport(
        path=path,
        format="saved_model",
        size_bytes=_dir_size(path),
        signatures=signatures,
        parameters=param_count(variables),
        keras=keras_reloadability(path, flavor, code),
        distribution=distribution(mg, variables, loaded_classes),
        training=training_sidecar(path),
        model_code=code,
    )


def inspect_tflite(path: Path, trust_model_code: bool = False) -> InspectReport:
    """Signatures (via the LiteRT interpreter), weight elements by dtype and op counts of a .tflite file."""
    path = Path(path)
    data = read_tflite(path)
    try:
        summary = summarize_tflite(data)
    except Exception as exc:  # flatbuffer decoding raises assorted errors on truncated/corrupt files
        raise ModelError(
            f"{path} has a TFLite header but its flatbuffer is unreadable: {type(exc).__name__}: {exc}"
        ) from None
    try:
        signatures = tflite_signatures(path) or (tflite_signature(path),)
    except ModelError:
        if not summary.flex_ops:
            raise
        signatures = (flatbuffer_signature(data),)  # LiteRT opens no Flex model; the flatbuffer still says
    by_dtype = _tflite_weight_elements(data)
    state = read_state(data)  # resource variables a stateful=True layer writes on each call
    params = ParamCount(sum(by_dtype.values()), None, None, by_dtype)
    return InspectReport(
        path=path,
        format="tflite",
        size_bytes=len(data),
        signatures=signatures,
        parameters=params,
        tflite={
            "ops": summary.ops,
            "weight_dtypes": summary.weight_dtypes,
            "activation_dtypes": summary.activation_dtypes,
            "variable_tensors": summary.variable_tensors,
            "state_warning": state_line(state) if state else state_warning(summary.variable_tensors),
            "state": None if state is None else state.to_dict(),
            "metadata": _embedded_metadata(data),
        },
        model_code=code_report(path, trust_model_code),
    )


def _embedded_metadata(data: bytes) -> dict | None:
    found = read_metadata(data)
    return None if found is None else found.to_dict()


def _tflite_weight_elements(data: bytes) -> dict:
    """Elements of constant tensors, per dtype (int8 weights show up as int8, their float biases as float32)."""
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(data), 0))
    names = enum_names(schema.TensorType)
    counts: Counter = Counter()
    for sg in model.subgraphs:
        for t in sg.tensors:
            if is_constant(model, t):
                n = 1
                for d in t.shape if t.shape is not None else []:
                    n *= int(d)
                counts[names.get(t.type, str(t.type)).lower()] += n
    return dict(counts)
