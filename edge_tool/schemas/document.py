"""``Document``: a file edgetool writes for other programs (manifest.json, the eval JSON, decision.json) as a frozen
dataclass whose JSON form is the serializer's (``calibration.serial``), validated against its published schema
before it is built."""

from __future__ import annotations

from pathlib import Path

from edge_tool.calibration import serial
from edge_tool.errors import DataError
from edge_tool.schemas import check, load, read_json


class Document(serial.Record):
    """Mixin of the top-level dataclass of one published file; subclasses set ``schema_name`` and ``file_name``."""

    __slots__ = ()
    schema_name = ""
    file_name = ""

    @classmethod
    def from_dict(cls, data, what: str | None = None):
        """Validate ``data`` against the published schema and build; one DataError naming ``what`` otherwise."""
        what = what or cls.file_name
        check(data, cls.schema_name, what)
        try:
            return serial.from_dict(cls, data)
        except serial.SerialError as exc:  # a shape the schema allows that a record refuses
            schema = load(cls.schema_name)
            raise DataError(
                f"{what} is not a valid {schema['title']}: {' '.join(str(exc).split())[:300]}. Expected "
                f"the file as edgetool writes it (schema {schema['$id']}, described in docs/schemas.md); "
                "rewrite it with edgetool or remove it."
            ) from None

    @classmethod
    def read(cls, path: Path):
        """Read and validate the file at ``path`` (a possibly hostile file)."""
        return cls.from_dict(read_json(path, cls.schema_name), str(path))
