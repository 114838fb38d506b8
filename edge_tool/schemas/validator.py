"""A small JSON Schema (draft 2020-12) checker for the subset edgetool's own schemas use.

Keywords: ``type`` (one or a list), ``properties``, ``required``, ``additionalProperties`` (bool or schema),
``items``, ``enum``, ``const``, ``minimum``, ``if``/``then``/``else``, ``$ref`` (``#/$defs/...`` only); annotations
are ignored. The tests
check the same files with the ``jsonschema`` package, so the two cannot disagree unnoticed. No recursion beyond
the schema's own depth: a hostile document cannot make it recurse deeper than the schema does.
"""

from __future__ import annotations

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def problems(doc, schema: dict, root: dict | None = None, where: str = "$") -> list[str]:
    """Every way ``doc`` breaks ``schema`` ("at $.artifacts[0].quant: expected string, found int 3")."""
    root = root if root is not None else schema
    if "$ref" in schema:
        schema = _resolve(schema["$ref"], root)
    found = _type_problem(doc, schema, where)
    if found:
        return [found]
    out = []
    if "const" in schema and doc != schema["const"]:
        out.append(f"at {where}: expected {schema['const']!r}, found {_show(doc)}")
    if "enum" in schema and doc not in schema["enum"]:
        out.append(f"at {where}: expected one of {', '.join(map(repr, schema['enum']))}, found {_show(doc)}")
    if "minimum" in schema and _TYPES["number"](doc) and doc < schema["minimum"]:
        out.append(f"at {where}: expected a number >= {schema['minimum']}, found {_show(doc)}")
    if isinstance(doc, dict):
        out += _object_problems(doc, schema, root, where)
    if "if" in schema:
        branch = "then" if not problems(doc, schema["if"], root, where) else "else"
        out += problems(doc, schema[branch], root, where) if branch in schema else []
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            out += problems(item, schema["items"], root, f"{where}[{i}]")
    return out


def _object_problems(doc: dict, schema: dict, root: dict, where: str) -> list[str]:
    out = [f"at {where}: missing key {key!r}" for key in schema.get("required", ()) if key not in doc]
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in doc.items():
        if key in props:
            out += problems(value, props[key], root, f"{where}.{key}")
        elif extra is False:
            out.append(f"at {where}: unexpected key {_show(key)}")
        elif isinstance(extra, dict):
            out += problems(value, extra, root, f"{where}[{_show(key)}]")
    return out


def _type_problem(doc, schema: dict, where: str) -> str | None:
    wanted = schema.get("type")
    if wanted is None:
        return None
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    if any(_TYPES[name](doc) for name in names):
        return None
    return f"at {where}: expected {' or '.join(names)}, found {_show(doc)}"


def _resolve(ref: str, root: dict) -> dict:
    if not ref.startswith("#/$defs/"):
        raise ValueError(f"unsupported $ref {ref!r} in an edgetool schema")
    return root["$defs"][ref.removeprefix("#/$defs/")]


def _show(value) -> str:
    """A short description of a found value (its JSON type and, for scalars, the value itself)."""
    kind = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
            int: "integer", float: "number"}.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return f"{kind} of {len(value)} item(s)"
    shown = repr(value)
    return f"{kind} {shown[:60] + '…' if len(shown) > 60 else shown}"
