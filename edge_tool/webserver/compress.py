"""gzip for ``edgetool serve``: text and wasm files go compressed to clients that accept it, as static hosts do.

A `--litert` site's LiteRT.js wasm build is its largest file and compresses well: compression is what keeps a
phone's first visit small (sizes in docs/demo.md). Compressed bodies are kept per (path, mtime, size) up to CACHE_BYTES, so a
build is compressed once, not per request.
"""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".json", ".webmanifest", ".wasm", ".txt", ".svg", ".tflite"}
MIN_BYTES = 1024  # smaller bodies are not worth the header
LEVEL = 6
CACHE_BYTES = 64 * 1024 * 1024  # compressed bodies kept in memory at most (oldest dropped first)

_cache: dict[tuple[str, int, int], bytes] = {}
_lock = threading.Lock()


def accepts_gzip(accept_encoding: str | None) -> bool:
    """True when an Accept-Encoding header value allows gzip (a `gzip;q=0` refusal is honoured)."""
    for part in (accept_encoding or "").lower().split(","):
        name, _, params = part.partition(";")
        if name.strip() not in ("gzip", "*"):
            continue
        params = params.strip()
        if not params.startswith("q="):
            return True
        try:
            return float(params[2:]) > 0
        except ValueError:
            return False
    return False


def gzipped(path: Path, data: bytes) -> bytes | None:
    """``data`` (the bytes of ``path``) gzip-compressed, or None when the file type or size is not worth it."""
    if Path(path).suffix.lower() not in COMPRESSIBLE or len(data) < MIN_BYTES:
        return None
    stat = os.stat(path)
    key = (str(path), stat.st_mtime_ns, len(data))
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    packed = gzip.compress(data, LEVEL, mtime=0)
    if len(packed) >= len(data):
        return None
    with _lock:
        _cache[key] = packed
        while sum(len(v) for v in _cache.values()) > CACHE_BYTES:
            del _cache[next(iter(_cache))]
    return packed
