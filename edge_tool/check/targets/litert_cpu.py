"""litert-cpu: the LiteRT interpreter on the CPU — load, allocate and invoke it for real (in a child process)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from edge_tool.check import lm_cache
from edge_tool.check.base import Finding, Status, TargetResult, target_result
from edge_tool.check.device_target import litert_cpu_on_device
from edge_tool.check.registry import TARGETS, TargetSpec
from edge_tool.check.targets.common import model_ops, of_artefact
from edge_tool.core.childproc import module_command

TIMEOUT_S = 300


def check(path: Path) -> TargetResult:
    """Run the fp32 artefact (or the given .tflite) in LiteRT; name Flex ops, which need the Flex delegate. A
    language model is run as one: prefill, then decode with the caches fed back (``check.lm_cache``)."""
    if lm_cache.is_lm(path):
        findings, details = lm_cache.litert_check(path)
        method = "prefill + decode with the KV cache fed back, in the LiteRT interpreter (check.lm_cache)"
        return target_result("litert-cpu", path, findings, method, {"fed_back": details.get("fed_back", "")})
    method = "load + allocate + invoke with the LiteRT interpreter in a child process"
    proc = subprocess.run(
        module_command("edge_tool.check.litert_probe", path), capture_output=True, text=True, timeout=TIMEOUT_S
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    result = (
        json.loads(lines[-1]) if lines else {"ok": False, "error": f"the interpreter crashed (exit {proc.returncode})"}
    )
    findings = []
    if not result["ok"]:
        flex = [op for op in model_ops(path) if op.startswith("Flex")]
        findings = [
            Finding(
                op,
                Status.UNSUPPORTED,
                "a TensorFlow (Flex) op: needs the Flex delegate (select TF ops), "
                "which the LiteRT pip runtime does not include; link tensorflow-lite-select-tf-ops in the "
                "app, or replace the op",
            )
            for op in flex
        ]
        if not findings:
            findings = [Finding("(model)", Status.UNSUPPORTED, result["error"].strip()[:800] or "failed")]
    return target_result("litert-cpu", path, findings, method, {"runtime": result.get("runtime", "")})


SPEC = TARGETS.register(
    TargetSpec(
        "litert-cpu",
        "LiteRT interpreter, CPU (builtin kernels + XNNPACK)",
        "fp32",
        of_artefact("litert-cpu", "fp32", check),
        on_device=litert_cpu_on_device,
    )
)
