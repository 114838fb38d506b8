"""litertjs: LiteRT.js (@litertjs/core, wasm) — the vendored runtime of ``demo --litert`` runs the model in Node.

The artefact is what ``demo --litert`` would ship: the int8 .tflite with its batch fixed to 1 (LiteRT.js cannot run a
variable batch). Without Node or the vendored runtime, check falls back to what is known statically: LiteRT.js has no
Flex delegate and no custom ops, cannot run a variable input dimension, and refuses variable (state) tensors.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from edge_tool.check import lm_cache
from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import model_ops, of_artefact
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.litert.runtime import load_interpreter

TIMEOUT_S = 120
PROBE = Path(__file__).resolve().parents[1] / "litertjs_probe.mjs"


def vendor_dir() -> Path | None:
    """The vendored LiteRT.js runtime (web_demo/vendor/litert), if it is there."""
    path = web_demo_dir() / "vendor" / "litert"
    return path if (path / "core.js").is_file() and (path / "litert_wasm_compat_internal.wasm").is_file() else None


def run_in_node(model: Path, vendor: Path, plan: Path | None = None) -> tuple[bool, str, dict]:
    """(ran, error text with LiteRT's own ERROR lines, the probe's answer) from the Node probe."""
    args = [shutil.which("node"), str(PROBE), str(vendor), str(model), *([str(plan)] if plan else [])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = [ln[2:] for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    if not lines:
        return False, f"node exited {proc.returncode}: {proc.stderr.strip()[-400:]}", {}
    result = json.loads(lines[-1])
    errors = [ln.split("]", 1)[-1].strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.startswith("ERROR")]
    return bool(result["ok"]), "; ".join([*errors, result["error"]]).strip("; "), result


def lm_check(path: Path, vendor: Path) -> TargetResult:
    """A language model in LiteRT.js: prefill + decode with the caches fed back, equal to LiteRT's (check.lm_cache)."""
    reference, details = lm_cache.litert_check(path)
    with tempfile.TemporaryDirectory(prefix="edgetool-lmplan-") as tmp:
        plan = Path(tmp) / "plan.json"
        plan.write_text(json.dumps(details["plan"]))
        ran, error, answer = run_in_node(path, vendor, plan)
    findings = [Finding("(model)", Status.UNSUPPORTED, f"LiteRT.js: {error}")] if not ran else []
    if ran:
        findings = lm_cache.compare(details["decode_logits"], answer.get("decode_logits", []), "LiteRT.js")
    method = "prefill + decode with the KV cache fed back, in the vendored LiteRT.js (wasm) in Node, against LiteRT"
    return target_result("litertjs", path, [*reference, *findings], method)


def static_findings(model: Path) -> list[Finding]:
    """What is known without running LiteRT.js: Flex/custom ops and variable input dimensions."""
    findings = [
        Finding(op, Status.UNSUPPORTED, "custom/Flex op: LiteRT.js registers no custom ops and has no Flex delegate")
        for op in model_ops(model)
        if not op.isupper()
    ]
    for d in load_interpreter(model).get_input_details():
        sig = [int(s) for s in d.get("shape_signature", d["shape"])]
        if any(s < 0 for s in sig):
            findings.append(
                Finding(
                    "(model)",
                    Status.UNSUPPORTED,
                    f"input {d['name']} has a variable dimension {sig}: LiteRT.js cannot run or resize it",
                )
            )
    return findings


def check(path: Path) -> TargetResult:
    """Load, compile and run with LiteRT.js in Node; its error is the finding."""
    vendor = vendor_dir()
    if shutil.which("node") is None or vendor is None:
        findings = static_findings(path)
        why = "node is not on PATH" if shutil.which("node") is None else "the LiteRT.js runtime is not vendored"
        return target_result(
            "litertjs", path, findings, f"static checks only ({why}): Flex/custom ops and variable input dimensions"
        )
    if lm_cache.is_lm(path):
        return lm_check(path, vendor)
    ran, error, _ = run_in_node(path, vendor)
    findings = (
        []
        if ran
        else [
            *(f for f in static_findings(path) if f.op != "(model)"),
            Finding("(model)", Status.UNSUPPORTED, f"LiteRT.js: {error}"),
        ]
    )
    return target_result(
        "litertjs", path, findings, "load + compile + run with the vendored LiteRT.js (wasm compat build) in Node"
    )


SPEC = TARGETS.register(
    TargetSpec(
        "litertjs",
        "LiteRT.js in the browser (wasm, the runtime demo --litert ships)",
        "int8-b1",
        of_artefact("litertjs", "int8-b1", check),
    )
)
