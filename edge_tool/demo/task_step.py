"""What the page shows a model's outputs as: the task (eval's registry: classification, multilabel, regression,
segmentation, detection; ``--task`` or inferred as eval infers it) and each output's final activation, recorded in
demo-config.json so the page renders per task (a mask, independent probabilities, named numbers)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from edge_tool.demo.model import ModelKind
from edge_tool.tasks.activation import final_activations
from edge_tool.tasks.infer import infer_task

# model.json op -> activation (the graph's final op before Identity-like ones)
_TFJS_ACTIVATIONS = {
    "Softmax": "softmax",
    "Sigmoid": "sigmoid",
    "Relu": "relu",
    "Relu6": "relu",
    "Tanh": "tanh",
    "BiasAdd": "linear",
    "MatMul": "linear",
    "AddV2": "linear",
    "Add": "linear",
    "Conv2D": "linear",
    "_FusedMatMul": None,
    "FusedConv2D": None,
    "_FusedConv2D": None,
}
_THROUGH = {"Identity", "Reshape", "Squeeze", "ExpandDims", "Cast", "StopGradient"}
MAX_STEPS = 200


def activations(model: Path, kind: ModelKind, signature: str | None) -> dict[str, str]:
    """{output name: softmax | sigmoid | relu | tanh | linear | unknown}, read from the graph (no model code run)."""
    if kind is ModelKind.SAVED_MODEL:
        return final_activations(Path(model), signature or "serving_default")
    if kind is ModelKind.TFLITE:
        return {}  # a flatbuffer's final op is not read here: the task comes from the output's shape
    return _tfjs_activations(Path(model) / "model.json")


def _tfjs_activations(model_json: Path) -> dict[str, str]:
    """The same read off a tfjs graph model's nodes (fused ops carry their activation in ``fused_ops``)."""
    meta = json.loads(model_json.read_text())
    nodes = {n.get("name"): n for n in meta.get("modelTopology", {}).get("node", [])}
    found = {}
    for key, entry in (meta.get("signature", {}).get("outputs") or {}).items():
        found[key.split(":")[0]] = _walk(nodes, entry.get("name", key).split(":")[0])
    return found


def _walk(nodes: dict, name: str) -> str:
    for _ in range(MAX_STEPS):
        node = nodes.get(name)
        if node is None:
            return "unknown"
        op = node.get("op", "")
        if op in _THROUGH and node.get("input"):
            name = node["input"][0].lstrip("^").split(":")[0]
            continue
        if "Fused" in op:
            fused = [
                base64.b64decode(s).decode(errors="replace")
                for s in node.get("attr", {}).get("fused_ops", {}).get("list", {}).get("s", [])
            ]
            return next(
                (
                    _TFJS_ACTIVATIONS.get(f, "unknown")
                    for f in reversed(fused)
                    if f in _TFJS_ACTIVATIONS and f not in ("BiasAdd", "Add", "AddV2")
                ),
                "linear",
            )
        return _TFJS_ACTIVATIONS.get(op) or "unknown"
    return "unknown"


def page_task(task: str | None, outputs: list[dict], acts: dict[str, str]) -> dict:
    """demo-config.json's ``task``: {name, reason, assumed}; ``outputs`` (output_ui order, ranked head first) get
    their ``activation``."""
    for out in outputs:
        out["activation"] = acts.get(out["name"], "unknown")
    primary = outputs[0]
    if task is not None:
        return {"name": task, "reason": "--task", "assumed": False}
    shapes = {o["name"]: tuple(1 if d is None else d for d in o["shape"]) for o in outputs}
    choice = infer_task(shapes, primary["name"], {o["name"]: o["activation"] for o in outputs}, None)
    return {"name": choice.name, "reason": choice.reason, "assumed": choice.assumed}
