"""A TFJS graph model run by tfjs (cpu backend) in Node, through tfjs_run.js; inputs/outputs via temp files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError, ModelError, UsageError, collect_and_raise
from edge_tool.evaluate.data import InputSpec

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("tfjs_run.js")
SETUP_HINT = ".venv/bin/python -m edge_tool.demo.vendor (npm ci in web_demo/, copies @tensorflow/tfjs 4.22.0 to web_demo/vendor/tf.min.js)"
_DT = {"DT_FLOAT": "float32", "DT_INT32": "int32", "DT_INT64": "int32", "DT_UINT8": "int32", "DT_INT8": "int32",
       "DT_INT16": "int32", "DT_BOOL": "bool"}


def tfjs_bundle_path() -> Path:
    """tf.min.js (UMD, require-able in Node): $EDGETOOL_TFJS_BUNDLE, web_demo/vendor/, web_demo/node_modules/."""
    candidates = [REPO / "web_demo" / "vendor" / "tf.min.js",
                  REPO / "web_demo" / "node_modules" / "@tensorflow" / "tfjs" / "dist" / "tf.min.js"]
    env = os.environ.get("EDGETOOL_TFJS_BUNDLE")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if c.is_file():
            return c
    raise UsageError(
        "Evaluating a TFJS model needs the tfjs runtime for Node, but no tf.min.js was found (looked in "
        f"{', '.join(str(c) for c in candidates)}). Set it up with: {SETUP_HINT}; or point EDGETOOL_TFJS_BUNDLE "
        "at a tf.min.js."
    )


def node_binary() -> str:
    """The node executable; UsageError naming what to install if it is missing."""
    node = shutil.which("node")
    if node is None:
        raise UsageError("Evaluating a TFJS model needs Node.js (node on PATH, version >= 18); install it first.")
    return node


@dataclass(frozen=True)
class TfjsRun:
    """What one Node run gives: outputs by signature name, raw per-inference times (ms), tfjs version."""

    outputs: dict
    latency_ms: tuple[float, ...]
    version: str


def signature_inputs(model_json: Path) -> list[InputSpec]:
    """The graph model's signature inputs (name, dtype tfjs will use, shape) from model.json."""
    doc = json.loads(Path(model_json).read_text())
    specs = []
    for name, t in sorted((doc.get("signature") or {}).get("inputs", {}).items()):
        dims = t.get("tensorShape", {}).get("dim", [])
        shape = tuple(None if int(d.get("size", -1)) < 0 else int(d["size"]) for d in dims)
        specs.append(InputSpec(name, _DT.get(t.get("dtype"), "float32"), shape))
    return specs


def run_tfjs(model_json: Path, inputs: dict, warmup: int, runs: int | None, time_budget_s: float | None = None) -> TfjsRun:
    """Run every sample of ``inputs`` through the model in one batch, then time batch-1 calls (runs or budget)."""
    specs = signature_inputs(model_json)
    problems = []
    if specs and set(inputs) != {s.name for s in specs}:
        problems.append(f"{model_json} takes inputs {[s.name for s in specs]}, the data provides {sorted(inputs)}")
    for s in specs:
        if s.name not in inputs or not s.shape:
            continue
        want, got = s.shape[1:], inputs[s.name].shape[1:]
        if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got)):
            problems.append(f"input {s.name!r}: data per-sample shape {inputs[s.name].shape[1:]}, "
                            f"{model_json.parent.name} expects {s.shape[1:]}")
    collect_and_raise(problems, DataError, f"Eval data does not fit {model_json}:")
    dtypes = {s.name: s.dtype for s in specs}
    bundle, node = tfjs_bundle_path(), node_binary()
    with tempfile.TemporaryDirectory(prefix="edgetool-tfjs-") as tmp:
        request = {"inputs": {}, "latency": {"warmup": warmup, "runs": runs or 0, "time_budget_s": time_budget_s}}
        for name, x in inputs.items():
            dtype = dtypes.get(name, "float32")
            arr = np.ascontiguousarray(x, dtype=np.uint8 if dtype == "bool" else dtype)
            f = Path(tmp) / f"in{len(request['inputs'])}.bin"
            arr.tofile(f)
            request["inputs"][name] = {"file": str(f), "dtype": dtype, "shape": list(arr.shape)}
        req_path = Path(tmp) / "request.json"
        req_path.write_text(json.dumps(request))
        proc = subprocess.run([node, str(SCRIPT), str(bundle), str(model_json), str(req_path)],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelError(f"tfjs could not run {model_json} in Node: {proc.stderr.strip()[-1500:]}")
    doc = json.loads(proc.stdout)
    outputs = {k: np.asarray(v["data"], dtype=np.float64).reshape(v["shape"]) for k, v in doc["outputs"].items()}
    return TfjsRun(outputs, tuple(doc["latency_ms"]), f"tfjs {doc['tfjs_version']} ({doc['backend']} backend, Node)")
