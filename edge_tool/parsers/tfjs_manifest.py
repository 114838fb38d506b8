"""A TFJS graph model's model.json, read (``read_graph_model_json``: size-capped, inside its directory, every shard
path a file inside it) and checked against its shards (``check_manifest``). One validation for every reader of a
model.json (demo, eval, check), so none of them publishes or runs a model that tfjs cannot load.

Checked, every problem collected and raised once (ModelError naming model.json and the entry): the
weightsManifest is a list of groups with a list of shard paths and a list of weight objects; each weight has a
unique string name, a known dtype (and quantization dtype) and a shape of non-negative integers; each group's
shards hold exactly the bytes its weights need (a shard shorter than the manifest says would fail in the browser;
a longer one means the manifest and the shards are out of step); the signature maps names to tensors whose dims
are integers. Shard paths are resolved inside the model directory by the caller (``fsutil.resolve_inside``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from edge_tool.calibration.safe_open import read_regular
from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.fsutil import resolve_inside
from edge_tool.errors import ModelError, collect_and_raise
from edge_tool.parsers.limits import check_specs

# bytes per element as tfjs stores them (string weights are length-prefixed, checked only for a lower bound)
WEIGHT_BYTES = {"float32": 4, "int32": 4, "bool": 1, "complex64": 8, "string": None}
QUANT_BYTES = {"uint8": 1, "uint16": 2, "float16": 2}
MAX_PROBLEMS = 8
TFJS_DTYPES = {
    "DT_FLOAT": "float32",
    "DT_INT32": "int32",
    "DT_INT64": "int32",
    "DT_BOOL": "bool",
    "DT_UINT8": "int32",
    "DT_INT8": "int32",
    "DT_INT16": "int32",
    "DT_STRING": "string",
    "DT_HALF": "float32",
}


def _is_dim(d: object) -> bool:
    return isinstance(d, int) and not isinstance(d, bool) and d >= 0


def _weight_problem(w: object, seen: set) -> tuple[str | None, int | None]:
    """(why this weight entry is malformed or None, the bytes it needs or None when variable-length)."""
    if not isinstance(w, dict):
        return f"a weight entry is {type(w).__name__}, not an object", None
    name = w.get("name")
    if not isinstance(name, str) or not name:
        return f"a weight entry has no string name ({name!r:.80})", None
    if name in seen:
        return f"the weight name {name!r:.120} appears twice", None
    seen.add(name)
    shape, dtype = w.get("shape"), w.get("dtype")
    if not isinstance(shape, list) or not all(_is_dim(d) for d in shape):
        return f"weight {name!r:.120} has the shape {str(shape)[:80]} (expected a list of non-negative integers)", None
    if dtype not in WEIGHT_BYTES:
        return (
            f"weight {name!r:.120} has the dtype {str(dtype)[:40]!r} (expected one of {', '.join(WEIGHT_BYTES)})",
            None,
        )
    quant = w.get("quantization")
    per = WEIGHT_BYTES[dtype]
    if quant is not None:
        qdtype = quant.get("dtype") if isinstance(quant, dict) else None
        if qdtype not in QUANT_BYTES:
            return (
                f"weight {name!r:.120} has a quantization of dtype {str(qdtype)[:40]!r} (expected one of "
                f"{', '.join(QUANT_BYTES)})",
                None,
            )
        per = QUANT_BYTES[qdtype]
    count = math.prod(shape)
    return None, (count * per if per is not None else None)


def _group_problems(model_dir: Path, model_json: Path, index: int, group: dict, seen: set) -> list[str]:
    problems, need, exact = [], 0, True
    for w in group.get("weights", []):
        problem, size = _weight_problem(w, seen)
        if problem:
            problems.append(problem)
        elif size is None:
            exact = False
        else:
            need += size
    if problems:
        return problems
    shards = [model_dir / p for p in group.get("paths", [])]
    have = sum(p.stat().st_size for p in shards if p.is_file())
    if have < need or (exact and have != need):
        listed = ", ".join(repr(str(p.name)) for p in shards) or "no shards"
        problems.append(
            f"weight group {index} needs {need:,} bytes for its weights, but its shards ({listed}) hold {have:,} bytes"
        )
    return problems


def _signature_problems(doc: dict) -> list[str]:
    signature = doc.get("signature")
    if signature is None:
        return []
    if not isinstance(signature, dict):
        return ["the signature is not an object"]
    problems = []
    for role in ("inputs", "outputs"):
        entries = signature.get(role, {})
        if not isinstance(entries, dict):
            problems.append(f"signature {role} is not an object")
            continue
        for key, t in entries.items():
            shape = t.get("tensorShape", {}) if isinstance(t, dict) else None
            dims = shape.get("dim", []) if isinstance(shape, dict) else None
            ok = isinstance(dims, list) and all(isinstance(d, dict) and _size_ok(d.get("size", -1)) for d in dims)
            if not ok:
                problems.append(
                    f"signature {role[:-1]} {key!r:.120} has a malformed tensorShape (expected "
                    "{dim: [{size: integer}]})"
                )
    return problems


def _size_ok(size: object) -> bool:
    """A tensorShape dim size: an integer (or its decimal string, as protobuf JSON writes int64), -1 for unknown."""
    if isinstance(size, bool):
        return False
    if isinstance(size, str):
        size = size.strip()
        return size.lstrip("-").isdigit() and int(size) >= -1
    return isinstance(size, int) and size >= -1


def check_manifest(model_dir: Path, doc: dict) -> None:
    """Raise one ModelError listing every inconsistency of ``doc`` (model.json of ``model_dir``) with its shards."""
    model_json = Path(model_dir) / "model.json"
    problems, seen = [], set()
    for index, group in enumerate(doc.get("weightsManifest", [])):
        problems.extend(_group_problems(Path(model_dir), model_json, index, group, seen))
    problems.extend(_signature_problems(doc))
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"and {len(problems) - MAX_PROBLEMS} more"]
    collect_and_raise(
        problems, ModelError, f"{model_json} does not match a loadable TFJS graph model (tfjs would fail to load it):"
    )
    check_specs(_input_specs(doc), f"{model_json}: input")  # the page and the Node runner allocate these


def _input_specs(doc: dict) -> list[TensorSpec]:
    """The signature inputs of a validated model.json as TensorSpecs (dtype as tfjs holds it)."""
    inputs = (doc.get("signature") or {}).get("inputs", {})
    return [
        TensorSpec(
            str(key),
            TFJS_DTYPES.get(t.get("dtype"), "float32"),
            tuple(int(d.get("size", -1)) for d in t.get("tensorShape", {}).get("dim", [])),
        )
        for key, t in inputs.items()
        if isinstance(t, dict)
    ]


MAX_MODEL_JSON_BYTES = 256 * 1024 * 1024  # topology JSON; the weights live in the shards


def read_graph_model_json(model_dir: Path, user: str) -> dict:
    """Parse ``model_dir/model.json``; ModelError unless it is a tfjs graph model (``user`` names who needs one).

    model.json must itself lie inside ``model_dir`` (symlinks resolved), and every weight shard path it lists
    must resolve to a file inside ``model_dir`` (``fsutil.resolve_inside``); see ``weight_paths``.
    """
    model_json = resolve_inside(Path(model_dir), "model.json", Path(model_dir))
    raw = read_regular(
        model_json,
        "a TFJS model.json",
        ModelError,
        MAX_MODEL_JSON_BYTES,
        "a model.json that large is not a TFJS graph model edgetool reads",
    )
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ModelError(f"{model_json} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != "graph-model":
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ModelError(
            f"{model_json} is a {found!r} TFJS model; {user} runs graph models "
            "(edgetool convert MODEL --format tfjs writes one)."
        )
    weight_paths(model_dir, doc)
    check_manifest(Path(model_dir), doc)  # weights, shard sizes, signature shapes: what tfjs needs to load it
    return doc


def weight_paths(model_dir: Path, doc: dict) -> list[str]:
    """Shard paths listed in a model.json, each checked to be a file inside ``model_dir``; ModelError otherwise."""
    model_json = Path(model_dir) / "model.json"
    manifest = doc.get("weightsManifest", [])
    groups_ok = isinstance(manifest, list) and all(
        isinstance(g, dict) and isinstance(g.get("paths", []), list) and isinstance(g.get("weights", []), list)
        for g in manifest
    )
    if not groups_ok:
        raise ModelError(
            f"{model_json} has a malformed weightsManifest (expected a list of groups, each with a "
            "list of 'paths' and a list of 'weights')."
        )
    paths = [p for group in manifest for p in group.get("paths", [])]
    missing = []
    for rel in paths:
        shard = resolve_inside(Path(model_dir), rel, model_json)
        if not shard.is_file():
            missing.append(rel)
    if missing:
        raise ModelError(f"{model_json} lists weight shards that are missing: {', '.join(map(repr, missing))}.")
    return paths
