"""The one table of TensorFlow ops whose effects reach outside the tensor world, and what each one does.

A SavedModel graph (or a .tflite file's Flex ops) that holds any of these can touch the machine it runs on: write,
read or delete files, run Python, talk to the network. ``edge_tool.trust.graph_scan`` looks every node of the
graph and of every library function up in ``SIDE_EFFECT_OPS``; ops in ``CONDITIONAL`` are flagged only when an
attribute says they leave the tensor world (``PrintV2`` to a file, ``DecodeProtoV2`` reading descriptors from a
file). ``CHECKPOINT_OPS`` are the ones a SavedModel's own saver uses: they are allowed inside the saver's save and
restore subgraphs and flagged anywhere else; text-file table initialisers that read the SavedModel's own assets
(``graph_scan._reads_own_asset``) are not flagged. The table is a list of known ops, not a proof of safety (see
docs/security.md).
"""

from __future__ import annotations

WRITES = "writes files"
READS = "reads files"
PYTHON = "runs Python code"
NETWORK = "talks to other processes or machines"
CHECKPOINT = "reads or writes checkpoints"

_TABLE: dict[str, tuple[str, ...]] = {
    WRITES: (
        "WriteFile",
        "DatasetToTFRecord",
        "ExperimentalDatasetToTFRecord",
        "SaveDataset",
        "SaveDatasetV2",
        "DistributedSave",
        "SnapshotDataset",
        "SnapshotDatasetV2",
        "CacheDataset",
        "CacheDatasetV2",
        "CreateSummaryFileWriter",
        "CreateSummaryDbWriter",
        "SummaryWriter",
        "WriteSummary",
        "WriteScalarSummary",
        "WriteHistogramSummary",
        "WriteImageSummary",
        "WriteAudioSummary",
        "WriteGraphSummary",
        "WriteRawProtoSummary",
        "ImportEvent",
        "FlushSummaryWriter",
        "CloseSummaryWriter",
        "DebugIdentity",
        "DebugIdentityV2",
        "DebugIdentityV3",
        "DebugNanCount",
        "DebugNumericSummary",
        "DumpTensor",
        "CalibrationStatisticsSaver",
        "FileSystemSetConfiguration",
    ),
    READS: (
        "ReadFile",
        "MatchingFiles",
        "ImmutableConst",
        "LoadAndRemapMatrix",
        "InitializeTableFromTextFile",
        "InitializeTableFromTextFileV2",
        "RecordInput",
        "TFRecordDataset",
        "TFRecordDatasetV2",
        "FixedLengthRecordDataset",
        "FixedLengthRecordDatasetV2",
        "TextLineDataset",
        "MatchingFilesDataset",
        "ExperimentalMatchingFilesDataset",
        "LoadDataset",
        "SnapshotDatasetReader",
        "SnapshotNestedDatasetReader",
        "SnapshotChunkDataset",
        "ListSnapshotChunksDataset",
        "SqlDataset",
        "ExperimentalSqlDataset",
        "CSVDataset",
        "CSVDatasetV2",
        "ExperimentalCSVDataset",
        "LMDBDataset",
        "ExperimentalLMDBDataset",
        "WholeFileReader",
        "WholeFileReaderV2",
        "TextLineReader",
        "TextLineReaderV2",
        "TFRecordReader",
        "TFRecordReaderV2",
        "FixedLengthRecordReader",
        "FixedLengthRecordReaderV2",
        "IdentityReader",
        "IdentityReaderV2",
        "LMDBReader",
        "ReaderRead",
        "ReaderReadV2",
        "ReaderReadUpTo",
        "ReaderReadUpToV2",
        "ReaderRestoreState",
        "ReaderRestoreStateV2",
    ),
    PYTHON: ("PyFunc", "PyFuncStateless", "EagerPyFunc"),
    NETWORK: (
        "RpcClient",
        "RpcCall",
        "RpcServer",
        "RpcServerRegister",
        "RpcServerStart",
        "RpcCheckStatus",
        "RpcGetValue",
        "DeleteRpcFutureResource",
        "RemoteCall",
        "DataServiceDataset",
        "DataServiceDatasetV2",
        "DataServiceDatasetV3",
        "DataServiceDatasetV4",
        "RegisterDataset",
        "RegisterDatasetV2",
    ),
    CHECKPOINT: (
        "Save",
        "SaveV2",
        "SaveSlices",
        "Restore",
        "RestoreV2",
        "RestoreSlice",
        "MergeV2Checkpoints",
        "DTensorRestoreV2",
    ),
}

SIDE_EFFECT_OPS: dict[str, str] = {op: what for what, ops in _TABLE.items() for op in ops}
CHECKPOINT_OPS = frozenset(_TABLE[CHECKPOINT])


def _print_to_file(attrs: dict) -> str | None:
    stream = attrs.get("output_stream", "")
    return "prints to a file" if stream.startswith("file://") else None


def _proto_descriptor_file(attrs: dict) -> str | None:
    source = attrs.get("descriptor_source", "local://")
    return None if source == "local://" or source.startswith("bytes://") else "reads a descriptor file"


# op -> (attribute names to read as strings, rule returning what it does or None when harmless)
CONDITIONAL = {
    "PrintV2": (("output_stream",), _print_to_file),
    "DecodeProtoV2": (("descriptor_source",), _proto_descriptor_file),
    "EncodeProto": (("descriptor_source",), _proto_descriptor_file),
}


def effect_of(op: str, attrs: dict | None = None) -> str | None:
    """What ``op`` does outside the tensor world (``attrs``: its string attributes), or None when nothing known."""
    if op in SIDE_EFFECT_OPS:
        return SIDE_EFFECT_OPS[op]
    if op in CONDITIONAL:
        return CONDITIONAL[op][1](attrs or {})
    return None


def table_rows() -> list[tuple[str, str]]:
    """(what, comma-separated ops) per category, for the docs."""
    rows = [(what, ", ".join(ops)) for what, ops in _TABLE.items()]
    rows += [(f"{op} (when {'/'.join(names)} points at a file)", op) for op, (names, _) in CONDITIONAL.items()]
    return rows


# Ops that call back into the Python interpreter that traced the model: no TFLite runtime (Flex included) and no
# TFJS backend has a kernel for them, and no option changes that.
PYTHON_CALLBACK_OPS = {
    "PyFunc": "tf.numpy_function",
    "PyFuncStateless": "tf.numpy_function",
    "EagerPyFunc": "tf.py_function",
}


def python_callback_refusal(model, ops: list[str]) -> str:
    """Why a model with Python callbacks cannot be converted, and the way out."""
    calls = " / ".join(dict.fromkeys(PYTHON_CALLBACK_OPS[op] for op in ops))
    return (
        f"{model} calls back into Python ({calls}: op {', '.join(ops)}). That runs only inside the Python "
        "process that traced the model: TensorFlow loading the SavedModel anywhere else cannot run it (so "
        "--trust-model-code does not help), no TFLite runtime has a kernel for it — not with --allow-select-tf-ops "
        "(Flex has none) nor --batch — and neither does TensorFlow.js. Rewrite that step with TensorFlow ops, "
        "or do it outside the model (in the app, before the input is fed) and save the model without it."
    )
