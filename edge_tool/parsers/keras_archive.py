"""Check a ``.keras`` file (a zip archive) before any Keras loader unpacks it: a few-MB zip bomb must not expand to
gigabytes, and a damaged or hostile archive must be one clear refusal (exit 2), not a loader's traceback.

Checked, before Keras sees the file: it is a regular file and a readable zip; at most ``MAX_MEMBERS`` members,
each named by a plain relative path (no absolute path, ``..``, backslash, control character; no duplicates); a
compression method Python can read; declared sizes that add up to at most ``limits.MAX_UNPACKED_BYTES``
(``EDGETOOL_MAX_UNPACKED_BYTES``); no member over 16 MiB that claims to have been compressed more than
``MAX_RATIO``:1 (real weights do not compress like that; a zip bomb does); ``config.json`` and
``metadata.json`` at most ``limits.MAX_DOCUMENT_BYTES`` and JSON objects. Then every member is streamed once
(never held in memory) with a cap at its declared size, so a member whose data disagrees with its header (CRC,
truncation, a lying size) is refused too.
"""

from __future__ import annotations

import json
import lzma
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from edge_tool.calibration.safe_open import open_regular
from edge_tool.errors import ModelError
from edge_tool.parsers.declared_sizes import check_h5_datasets
from edge_tool.parsers.limits import MAX_DOCUMENT_BYTES, MAX_UNPACKED_BYTES, UNPACKED_ENV, limit_from_env

MAX_MEMBERS = 10_000
MAX_RATIO = 200
RATIO_FLOOR = 16 << 20  # small members may compress as much as they like (a config of repeated keys)
JSON_MEMBERS = ("config.json", "metadata.json")
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    UnicodeDecodeError,
    OverflowError,
)
CHUNK = 1 << 20
MAX_METADATA_BYTES = 1 << 20  # a .keras metadata.json is a few hundred bytes (keras_archive_version)


@dataclass(frozen=True)
class KerasArchive:
    """What a checked .keras archive holds: its member names and its parsed config.json / metadata.json."""

    path: Path
    members: tuple[str, ...]
    config: dict
    metadata: dict | None


def _name_problem(name: str, seen: set) -> str | None:
    if not name or len(name) > 1024 or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "is empty, overlong or holds a control character"
    if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        return "is absolute or uses backslashes"
    if any(part in (".", "..") for part in name.rstrip("/").split("/")):
        return "has a '.' or '..' segment"
    if name in seen:
        return "appears twice"
    seen.add(name)
    return None


def _member_problem(info: zipfile.ZipInfo, seen: set) -> str | None:
    problem = _name_problem(info.filename, seen)
    if problem:
        return f"the member name {info.filename[:200]!r} {problem}"
    if info.compress_type not in METHODS:
        return f"member {info.filename!r} uses compression method {info.compress_type}, which edgetool does not read"
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (
            f"member {info.filename!r} claims {info.file_size:,} bytes from {info.compress_size:,} compressed "
            f"(over {MAX_RATIO}:1): a zip bomb, not model weights"
        )
    if info.filename in JSON_MEMBERS and info.file_size > MAX_DOCUMENT_BYTES:
        return f"member {info.filename!r} is {info.file_size:,} bytes (at most {MAX_DOCUMENT_BYTES:,})"
    return None


def _stream(zf: zipfile.ZipFile, info: zipfile.ZipInfo, keep: bool) -> bytes:
    """Read ``info`` through once in chunks (CRC checked by zipfile at the end), never past its declared size;
    return the bytes only when ``keep``."""
    kept, total = [], 0
    with zf.open(info) as f:
        while chunk := f.read(CHUNK):
            total += len(chunk)
            if total > info.file_size:
                raise zipfile.BadZipFile(
                    f"member {info.filename!r} holds more than its declared {info.file_size:,} bytes"
                )
            if keep:
                kept.append(chunk)
    if total != info.file_size:
        raise zipfile.BadZipFile(f"member {info.filename!r} holds {total:,} bytes, not the {info.file_size:,} declared")
    return b"".join(kept)


def _json_object(raw: bytes, name: str, path: Path) -> dict:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ModelError(f"{path} is not a readable .keras archive: {name} is not JSON ({str(exc)[:200]}).") from None
    if not isinstance(doc, dict):
        raise ModelError(
            f"{path} is not a readable .keras archive: {name} holds a {type(doc).__name__}, not a JSON object."
        )
    return doc


def _problems(infos: list[zipfile.ZipInfo]) -> list[str]:
    if len(infos) > MAX_MEMBERS:
        return [f"it has {len(infos):,} members (at most {MAX_MEMBERS:,})"]
    seen: set = set()
    problems = [p for p in (_member_problem(i, seen) for i in infos) if p]
    limit = limit_from_env(UNPACKED_ENV, MAX_UNPACKED_BYTES)
    total = sum(i.file_size for i in infos)
    if total > limit:
        problems.append(f"its members unpack to {total:,} bytes, over the {limit:,}-byte limit ({UNPACKED_ENV})")
    if "config.json" not in seen:
        problems.append("it has no config.json (every .keras archive has one)")
    return problems


def _check_weights_h5(zf: zipfile.ZipFile, path: Path) -> None:
    """The declared sizes of ``model.weights.h5``'s datasets (headers only, read through the zip member)."""
    if "model.weights.h5" not in zf.namelist():
        return
    import h5py

    with zf.open("model.weights.h5") as member:
        try:
            weights = h5py.File(member, "r")
        except (OSError, ValueError):
            return  # not HDF5: the loader says so
        with weights:
            check_h5_datasets(weights, f"{path} (model.weights.h5)")


def check_keras_archive(path: Path) -> KerasArchive:
    """The checked archive at ``path`` (see the module doc); one ModelError naming the file and the member otherwise."""
    path = Path(path)
    with open_regular(path, "a .keras model file", ModelError) as f:
        try:
            with zipfile.ZipFile(f) as zf:
                infos = zf.infolist()
                problems = _problems(infos)
                if problems:
                    raise ModelError(f"{path} is not a .keras archive edgetool unpacks: {'; '.join(problems[:5])}.")
                docs = {i.filename: _stream(zf, i, i.filename in JSON_MEMBERS) for i in infos if not i.is_dir()}
                _check_weights_h5(zf, path)
        except ModelError:
            raise
        except _ZIP_ERRORS as exc:
            raise ModelError(
                f"{path} is not a readable .keras archive (a zip file): {type(exc).__name__}: {str(exc)[:300]}."
            ) from None
    if not isinstance(docs.get("config.json"), bytes):
        raise ModelError(f"{path} is not a .keras archive edgetool unpacks: config.json is a directory, not a file.")
    config = _json_object(docs["config.json"], "config.json", path)
    metadata = _json_object(docs["metadata.json"], "metadata.json", path) if "metadata.json" in docs else None
    return KerasArchive(path, tuple(i.filename for i in infos), config, metadata)


def keras_archive_version(path: Path) -> str | None:
    """``keras_version`` from a .keras zip's metadata.json without loading the model; None when unreadable."""
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("metadata.json")
            if info.file_size > MAX_METADATA_BYTES:
                return None
            meta = json.loads(zf.read(info))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, RuntimeError, NotImplementedError):
        return None
    version = meta.get("keras_version") if isinstance(meta, dict) else None
    return str(version) if isinstance(version, (str, int, float)) else None
