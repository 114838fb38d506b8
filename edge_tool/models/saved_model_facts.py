"""How a SavedModel was made, read from its MetaGraph and files without running it: its variables and their
element counts, the cluster jobs and variable synchronisation a distribution strategy leaves (``inspect``'s
``distribution``), and edgetool train's ``train.json`` sidecar."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.safe_open import read_regular
from edge_tool.calibration.serial import Record
from edge_tool.errors import ModelError
from edge_tool.parsers.limits import MAX_SMALL_TEXT_BYTES

_SYNC = {0: "AUTO", 1: "NONE", 2: "ON_WRITE", 3: "ON_READ"}


@dataclass(frozen=True)
class ParamCount(Record):
    """Element counts of a model's weights."""

    total: int
    trainable: int | None
    non_trainable: int | None
    by_dtype: dict


def model_variables(mg) -> list:
    """SavedVariable protos of the model: the root's ``variables`` list if any, else every variable node."""
    nodes = mg.object_graph_def.nodes
    root = {c.local_name: c.node_id for c in nodes[0].children} if nodes else {}
    ids = None
    if "variables" in root:
        listed = [c.node_id for c in nodes[root["variables"]].children]
        if listed and all(nodes[i].WhichOneof("kind") == "variable" for i in listed):
            ids = listed
    if ids is None:
        ids = [i for i, n in enumerate(nodes) if n.WhichOneof("kind") == "variable"]
    return [nodes[i].variable for i in dict.fromkeys(ids)]


def param_count(variables) -> ParamCount:
    """Element counts of ``variables`` (SavedVariable protos): total, trainable, per dtype."""
    from tensorflow.python.framework import dtypes

    total = trainable = 0
    by_dtype: Counter = Counter()
    for v in variables:
        n = 1
        for d in v.shape.dim:
            n *= max(int(d.size), 0)
        total += n
        trainable += n if v.trainable else 0
        by_dtype[dtypes.as_dtype(v.dtype).name] += n
    return ParamCount(total, trainable, total - trainable, dict(by_dtype))


def _device_jobs(mg) -> list[str]:
    """Cluster job names found in node devices and in the device filters of call ops' config_proto."""
    from tensorflow.core.protobuf import config_pb2

    nodes = list(mg.graph_def.node)
    for fn in mg.graph_def.library.function:
        nodes.extend(fn.node_def)
    devices, configs = set(), set()
    for n in nodes:
        devices.add(n.device)
        if "config_proto" in n.attr and n.attr["config_proto"].s:
            configs.add(n.attr["config_proto"].s)
    for raw in configs:
        cfg = config_pb2.ConfigProto()
        try:
            cfg.ParseFromString(raw)
        except Exception:
            continue
        devices.update(cfg.device_filters)
        devices.update(f"/job:{job.name}" for job in cfg.cluster_def.job)
    return sorted({d.split("/job:")[1].split("/")[0] for d in devices if "/job:" in d})


def distribution(mg, variables, loaded_classes: dict) -> dict:
    """Variable synchronisation counts, cluster jobs, loaded variable classes and what they say about the strategy
    the model was saved under."""
    trainable_sync = Counter(_SYNC.get(v.synchronization, str(v.synchronization)) for v in variables if v.trainable)
    sync = Counter(_SYNC.get(v.synchronization, str(v.synchronization)) for v in variables)
    jobs = _device_jobs(mg)
    traces = []
    if trainable_sync.get("ON_WRITE"):
        traces.append(
            f"{trainable_sync['ON_WRITE']} trainable variable(s) saved with synchronization ON_WRITE: "
            "created under a mirrored strategy (MirroredVariable; Mirrored/MultiWorkerMirrored)."
        )
    if "worker" in jobs or "chief" in jobs:
        traces.append(f"graphs pinned to cluster job(s) {jobs}: traced inside a multi-worker cluster.")
    if "ps" in jobs:
        traces.append("graphs pinned to a 'ps' job: traced under ParameterServerStrategy.")
    if not traces:
        traces.append("no distribution-strategy traces (variables AUTO-synchronised, no cluster devices).")
    return {
        "variable_synchronization": dict(sync),
        "device_jobs": jobs,
        "loaded_variable_classes": loaded_classes,
        "traces": traces,
    }


def training_sidecar(path: Path) -> dict | None:
    """``strategy``, replica and worker counts and eval accuracy from ``path/train.json``; None when absent or
    unreadable."""
    sidecar = path / "train.json"
    if not sidecar.is_file():
        return None
    try:
        data = json.loads(read_regular(sidecar, "a train.json sidecar", ModelError, MAX_SMALL_TEXT_BYTES))
    except (OSError, ValueError, RecursionError, ModelError):  # unreadable, not JSON, or too large: no sidecar
        return None
    if not isinstance(data, dict):
        return None
    cfg = data.get("config") if isinstance(data.get("config"), dict) else {}

    def number(value):  # a hand-edited or hostile train.json must not break the report
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return {
        "strategy": str(cfg.get("strategy")),
        "num_replicas": number(data.get("num_replicas")),
        "workers": len(data["workers"]) if isinstance(data.get("workers"), list) else None,
        "eval_accuracy": number(data.get("eval_accuracy")),
    }
