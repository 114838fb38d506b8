"""Schema problems in words: the ``jsonschema`` package (draft 2020-12) validates, this module says each error as
"at $.artifacts[0].quant: expected string, found integer 3".

``jsonschema`` is imported on first use (``edgetool --help`` stays instant); validators are built once per schema.
It descends only as deep as the schema does, so a hostile document cannot make it recurse further.
"""

from __future__ import annotations

import json

_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    type(None): "null",
    int: "integer",
    float: "number",
}


def problems(doc, schema: dict) -> list[str]:
    """Every way ``doc`` breaks ``schema``, shallowest place first, one sentence each."""
    errors = sorted(
        _validator(schema).iter_errors(doc), key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path])
    )
    out: list[str] = []
    for error in errors:
        for line in _describe(error):
            if line not in out:
                out.append(line)
    return out


def _validator(schema: dict):
    """The validator of ``schema``, built once per ``$id`` (or per distinct schema text)."""
    key = schema.get("$id") or json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        import jsonschema  # noqa: PLC0415  (about 90 ms: only when a file is validated)

        jsonschema.Draft202012Validator.check_schema(schema)
        _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return _VALIDATORS[key]


_VALIDATORS: dict = {}


def _describe(error) -> list[str]:
    """One or more sentences for one ``jsonschema.ValidationError``."""
    where = _where(error.absolute_path)
    kind, want, found = error.validator, error.validator_value, error.instance
    if kind == "required":
        return [f"at {where}: missing key {key!r}" for key in want if isinstance(found, dict) and key not in found]
    if kind == "additionalProperties" and want is False:
        known = set(error.schema.get("properties", {}))
        return [f"at {where}: unexpected key {_show(key)}" for key in found if key not in known]
    if kind == "type":
        names = [want] if isinstance(want, str) else list(want)
        return [f"at {where}: expected {' or '.join(names)}, found {_show(found)}"]
    if kind == "const":
        return [f"at {where}: expected {want!r}, found {_show(found)}"]
    if kind == "enum":
        return [f"at {where}: expected one of {', '.join(map(repr, want))}, found {_show(found)}"]
    if kind == "minimum":
        return [f"at {where}: expected a number >= {want}, found {_show(found)}"]
    return [f"at {where}: {' '.join(error.message.split())[:200]}"]


def _where(path) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if str(part).isidentifier() else f"[{part!r}]"
    return out


def _show(value) -> str:
    """A short description of a found value (its JSON type and, for scalars, the value itself)."""
    kind = _TYPE_NAMES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return f"{kind} of {len(value)} item(s)"
    shown = repr(value)
    return f"{kind} {shown[:60] + '…' if len(shown) > 60 else shown}"
