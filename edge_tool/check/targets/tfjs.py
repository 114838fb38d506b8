"""tfjs: TensorFlow.js graph models — the tfjs converter's own supported-op table (tensorflowjs/op_list/*.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, verdict_of
from edge_tool.check.registry import register
from edge_tool.check.subject import Subject, Unavailable
from edge_tool.check.targets.common import conversion_failed

# Graph nodes that are not ops (inputs, constants) and need no kernel.
NOT_OPS = {"Placeholder", "Const", "PlaceholderWithDefault"}
_UNSUPPORTED = re.compile(r"Unsupported Ops in the model (?:before|after) optimization\s*\n?\s*(.+)")


def supported_ops() -> set[str]:
    """Every TF op name (``tfOpName``) the installed tensorflowjs converter maps onto a tfjs kernel."""
    import importlib.resources  # noqa: PLC0415

    names = set()
    for entry in importlib.resources.files("tensorflowjs").joinpath("op_list").iterdir():
        if entry.name.endswith(".json"):
            names.update(op["tfOpName"] for op in json.loads(entry.read_text()))
    return names


def graph_ops(model_dir: Path) -> list[str]:
    """Op names in a graph model's model.json (main graph and library functions), first-use order."""
    doc = json.loads((Path(model_dir) / "model.json").read_text())
    topo = doc.get("modelTopology") or {}
    nodes = list(topo.get("node") or [])
    for fn in ((topo.get("library") or {}).get("function") or []):
        nodes += fn.get("nodeDef") or []
    return list(dict.fromkeys(str(n.get("op", "")) for n in nodes if isinstance(n, dict) and n.get("op")))


@register("tfjs", "TensorFlow.js graph model (tfjs converter's op table)", "tfjs")
def check(subject: Subject) -> TargetResult:
    """Ops of the graph model (or the ops the converter refused) that tfjs has no kernel for."""
    try:
        path = subject.artefact("tfjs")
    except Unavailable as exc:
        match = _UNSUPPORTED.search(str(exc))
        if not match:
            return conversion_failed("tfjs", subject, exc)
        ops = [o.strip() for o in match.group(1).split(",") if o.strip()]
        findings = [Finding(op, Status.UNSUPPORTED, "not in the tfjs converter's op table: tfjs has no kernel for it")
                    for op in ops]
        return TargetResult("tfjs", subject.label, verdict_of(findings), tuple(findings),
                            "tensorflowjs converter (its op table check refused the model)")
    table = supported_ops()
    findings = [Finding(op, Status.UNSUPPORTED, "not in the tfjs converter's op table: tfjs has no kernel for it")
                for op in graph_ops(path) if op not in table and op not in NOT_OPS]
    return TargetResult("tfjs", str(path), verdict_of(findings), tuple(findings),
                        "graph-model ops against tensorflowjs/op_list/*.json")
