"""The one serializer of edgetool's frozen dataclasses: ``to_dict(obj)`` / ``from_dict(cls, data)``, driven by field
metadata (``field(metadata=spec("op"))``), so no class writes its JSON form by hand.

Every field is written under its own name, in declaration order (after the fields a class lists in its
``json_order`` attribute, when the file's order is not the constructor's), unless its metadata (``spec``) says:

- ``key``: the JSON key (``op_name`` → ``op``);
- ``omit``: ``"none"`` (left out when None), ``"empty"`` (left out when None, ``""``, ``()`` or ``{}``);
- ``when``: a predicate on the object; the key is written only when it holds (an entry kind's own keys);
- ``write=False``: read but never written (a transport-only field, e.g. raw latency samples);
- ``encode``/``decode``: the value's JSON form when it is not the plain one (a non-finite float as null);
  ``read``: the value from the whole JSON object, for a value that depends on a sibling key;
- ``flatten``: a nested dataclass whose keys are written into the parent object.

Values: nested dataclasses, tuples/lists (written as lists), dicts, str Enums (their value), Paths (str) and
optionals, with the field types read by ``typing.get_type_hints`` (string annotations included). ``init=False``
fields are derived: written, never read. ``from_dict`` ignores keys it does not know (the schemas let a later
version add keys) and raises ``SerialError`` naming the place (``$.artifacts[0].tensors``) for a value of the
wrong kind, or that its own check on construction (``__post_init__``'s UsageError) refuses. Lives in
``calibration`` (stdlib only), the floor every edgetool package may import.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import UsageError

_META = "edgetool.serial"
_OMIT = {
    "none": lambda v: v is None,
    "empty": lambda v: v is None or (not v and isinstance(v, (str, tuple, list, dict))),
}


class SerialError(ValueError):
    """A document does not have the shape of the dataclass it is read into; the message names the place."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """How one field is written and read (see the module docstring)."""

    key: str | None = None
    omit: str | None = None
    when: Callable[[Any], bool] | None = None
    write: bool = True
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None
    read: Callable[[dict], Any] | None = None
    flatten: bool = False

    def __post_init__(self) -> None:
        if self.omit is not None and self.omit not in _OMIT:
            raise ValueError(f"omit must be one of {', '.join(_OMIT)}, got {self.omit!r}")


def spec(key: str | None = None, **options) -> dict:
    """Field metadata for ``dataclasses.field(metadata=...)``: ``field(metadata=spec("op", omit="none"))``."""
    return {_META: Spec(key, **options)}


def to_dict(obj) -> dict:
    """The JSON-ready dict of dataclass ``obj`` (see the module docstring for what field metadata changes)."""
    out: dict = {}
    for f, rule, _ in _plan(type(obj)):
        if not rule.write:
            continue
        value = getattr(obj, f.name)
        if (rule.when is not None and not rule.when(obj)) or (rule.omit and _OMIT[rule.omit](value)):
            continue
        plain = rule.encode(value) if rule.encode else to_plain(value)
        if rule.flatten:
            out.update(plain)
        else:
            out[rule.key or f.name] = plain
    return out


def to_plain(value):
    """``value`` as JSON-ready data: dataclasses as dicts, tuples as lists, Enums as values, Paths as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def from_dict(cls, data, where: str = "$", strict: bool = False):
    """An instance of dataclass ``cls`` from its JSON form ``data``; SerialError naming the place otherwise. Keys
    ``cls`` does not know are ignored (a later version may add some), or refused when ``strict`` (a record built
    in this process: a misspelt key is a bug, not a newer file)."""
    if not isinstance(data, dict):
        raise SerialError(f"at {where}: expected an object, found {_kind(data)}")
    if strict and (unknown := set(data) - json_keys(cls)):
        raise SerialError(f"at {where}: {cls.__name__} has no key {', '.join(sorted(map(repr, unknown)))}")
    kwargs = {}
    for f, rule, hint in _plan(cls):
        if not f.init:
            continue
        key = rule.key or f.name
        if rule.flatten:
            kwargs[f.name] = from_dict(hint, data, where)
        elif rule.read is not None:
            kwargs[f.name] = rule.read(data)
        elif key in data:
            raw = data[key]
            kwargs[f.name] = rule.decode(raw) if rule.decode else build(hint, raw, f"{where}.{key}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if not _is_optional(hint):
                raise SerialError(f"at {where}: missing key {key!r}")
            kwargs[f.name] = None
    try:
        return cls(**kwargs)
    except UsageError as exc:  # the record's own check on construction (e.g. an input contract's mean per channel)
        head, *problems = str(exc).splitlines() or [""]
        said = " ".join([head, "; ".join(p.removeprefix("- ") for p in problems)]).strip()
        raise SerialError(f"at {where}: {' '.join(said.split())}") from None


def build(hint, raw, where: str = "$"):
    """``raw`` (parsed JSON) as a value of type ``hint``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return raw
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return build(options[0], raw, where)
        for option in options:  # e.g. int | float, str | dict: the first that takes it as it is
            if isinstance(raw, typing.get_origin(option) or option):
                return build(option, raw, where)
        raise SerialError(f"at {where}: expected {_name(hint)}, found {_kind(raw)}")
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, raw, where)
    if origin in (tuple, list) or hint in (tuple, list):
        if not isinstance(raw, list):
            raise SerialError(f"at {where}: expected an array, found {_kind(raw)}")
        item = args[0] if args and (origin is list or args[-1] is Ellipsis) else Any
        items = [build(item, v, f"{where}[{i}]") for i, v in enumerate(raw)]
        return tuple(items) if (origin or hint) is tuple else items
    if origin is dict or hint is dict:
        if not isinstance(raw, dict):
            raise SerialError(f"at {where}: expected an object, found {_kind(raw)}")
        value = args[1] if args else Any
        return {k: build(value, v, f"{where}[{k!r}]") for k, v in raw.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(raw)
        except ValueError:
            raise SerialError(
                f"at {where}: expected one of {', '.join(repr(m.value) for m in hint)}, found {_kind(raw)}"
            ) from None
    if hint is Path:
        return Path(_checked(str, raw, where))
    if hint in (str, bool, int, float):
        return _checked(hint, raw, where)
    return raw


def _checked(hint: type, raw, where: str):
    ok = {
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }.get(hint, lambda v: isinstance(v, hint))
    if not ok(raw):
        raise SerialError(f"at {where}: expected {_name(hint)}, found {_kind(raw)}")
    return raw


@functools.cache
def _plan(cls) -> tuple:
    """(field, Spec, resolved type) per field of ``cls``, in declaration order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    first = getattr(cls, "json_order", ())
    if unknown := set(first) - {f.name for f in fields}:
        raise TypeError(f"{cls.__name__}.json_order names no field {', '.join(sorted(unknown))}")
    fields = [*(f for name in first for f in fields if f.name == name), *(f for f in fields if f.name not in first)]
    return tuple((f, f.metadata.get(_META, _PLAIN), hints[f.name]) for f in fields)


_PLAIN = Spec()


def json_keys(cls) -> set[str]:
    """Every JSON key ``cls`` reads (a flattened record's keys included)."""
    keys = set()
    for f, rule, hint in _plan(cls):
        keys |= json_keys(hint) if rule.flatten else {rule.key or f.name}
    return keys


def _is_optional(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _name(hint) -> str:
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(hint, str(hint).replace("typing.", ""))


def _kind(value) -> str:
    kind = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "integer",
        float: "number",
    }.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return f"{kind} of {len(value)} item(s)"
    shown = repr(value)
    return f"{kind} {shown[:60] + '…' if len(shown) > 60 else shown}"


class Record:
    """Mixin of edgetool's frozen dataclasses that have a JSON form: ``to_dict()`` and ``from_dict(data)`` go
    through this module's serializer (the field metadata is the whole description)."""

    __slots__ = ()

    def to_dict(self) -> dict:
        """The JSON form (see ``calibration.serial``)."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data):
        """Build from the JSON form; SerialError naming the place for a value of the wrong kind."""
        return from_dict(cls, data)
