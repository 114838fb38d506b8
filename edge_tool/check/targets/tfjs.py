"""tfjs: TensorFlow.js graph models — the op table of tfjs 4.22's graph-model executor (``tfjs_writer.op_table``,
generated from @tensorflow/tfjs-converter's op mappers), then the graph model executed by tfjs itself (cpu backend,
the vendored runtime, in Node) on zeros.

The table alone is not enough: an op can be in it with attributes no backend implements (a ``_FusedConv2D`` with
hard-swish fused in: "Activation _fusedhardswish has not been implemented for the CPU backend"), so a model from
another converter is also run. Without Node or the vendored runtime only the table is checked, and ``method`` says
so.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from edge_tool.check.base import Finding, Status, TargetResult, Unavailable, target_result
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import conversion_failed
from edge_tool.errors import UsageError
from edge_tool.nodejs.tfjs_session import node_binary, tfjs_bundle_path
from edge_tool.tfjs_writer.export import ops_from_refusal
from edge_tool.tfjs_writer.op_table import TFJS_OPS, TFJS_VERSION

# Graph nodes that are not ops (inputs, constants) and need no kernel.
NOT_OPS = {"Placeholder", "Const", "PlaceholderWithDefault"}
_UNSUPPORTED = re.compile(r"Unsupported Ops in the model (?:before|after) optimization\s*\n?\s*(.+)")


def supported_ops() -> set[str]:
    """Every TF op name (``tfOpName``) tfjs' graph-model executor maps onto a kernel."""
    return set(TFJS_OPS)


def graph_ops(model_dir: Path) -> list[str]:
    """Op names in a graph model's model.json (main graph and library functions), first-use order."""
    doc = json.loads((Path(model_dir) / "model.json").read_text())
    topo = doc.get("modelTopology") or {}
    nodes = list(topo.get("node") or [])
    for fn in (topo.get("library") or {}).get("function") or []:
        nodes += fn.get("nodeDef") or []
    return list(dict.fromkeys(str(n.get("op", "")) for n in nodes if isinstance(n, dict) and n.get("op")))


def check(subject) -> TargetResult:
    """Ops of the graph model (or the ops the converter refused) that tfjs has no kernel for."""
    try:
        path = subject.artefact("tfjs")
    except Unavailable as exc:
        match = _UNSUPPORTED.search(str(exc))
        ops = [o.strip() for o in match.group(1).split(",") if o.strip()] if match else ops_from_refusal(str(exc))
        if not ops:
            return conversion_failed("tfjs", subject, exc)
        findings = [Finding(op, Status.UNSUPPORTED, "not in tfjs' op table: tfjs has no kernel for it") for op in ops]
        return target_result(
            "tfjs", subject.label, findings, "edgetool's TFJS writer (its op table check refused the model)"
        )
    table = supported_ops()
    findings = [
        Finding(op, Status.UNSUPPORTED, "not in tfjs' op table: tfjs has no kernel for it")
        for op in graph_ops(path)
        if op not in table and op not in NOT_OPS
    ]
    method = f"graph-model ops against tfjs {TFJS_VERSION}'s op table"
    if not findings:
        ran, error = run_in_node(Path(path))
        method += ", then executed by tfjs (cpu backend) in Node" if ran is not None else f"; {error}"
        if ran is False:
            findings = [Finding("(model)", Status.UNSUPPORTED, f"tfjs (cpu backend, Node): {error}")]
    return target_result("tfjs", path, findings, method)


PROBE = Path(__file__).resolve().parents[1] / "tfjs_probe.js"
TIMEOUT_S = 300


def run_in_node(model_dir: Path) -> tuple[bool | None, str]:
    """(True, "") if tfjs executes the model on zeros in Node, (False, its error), or (None, why it was not tried)."""
    try:
        cmd = [node_binary(), str(PROBE), str(tfjs_bundle_path()), str(model_dir)]
    except UsageError as exc:  # no node, or no vendored tfjs
        return None, f"not executed in Node: {exc}"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = [ln[2:] for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    if not lines:
        return False, f"node exited {proc.returncode}: {proc.stderr.strip()[-400:]}"
    result = json.loads(lines[-1])
    return bool(result["ok"]), str(result["error"])[:800]


SPEC = TARGETS.register(TargetSpec("tfjs", "TensorFlow.js graph model (tfjs executor's op table)", "tfjs", check))
