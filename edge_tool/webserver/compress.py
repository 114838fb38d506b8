"""gzip for ``edgetool serve``: text and wasm files go compressed to clients that accept it, as static hosts do.

A `--litert` site's LiteRT.js wasm build is its largest file and compresses well (to 30 %): compression is what
keeps a phone's first visit small (sizes in docs/demo.md). Each file is compressed once per (path, mtime, size)
— one thread compresses while the others wait for its result — and the compressed bodies are kept up to
CACHE_BYTES (oldest dropped first). A file over MAX_SOURCE_BYTES is never compressed (it is streamed as it is:
an 80 MB model used to be recompressed on every request, 3.5 CPU-s each), and a file that gzip shrinks by less
than a tenth (the weights of a .tflite: 90-93 % of their size, benchmarks/RESULTS.md) is remembered as
not worth it and sent as it is. At most COMPRESSORS files are compressed at a time, so the memory a burst of
requests can take is bounded too.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import BinaryIO

COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".json", ".webmanifest", ".wasm", ".txt", ".svg", ".tflite"}
MIN_BYTES = 1024  # smaller bodies are not worth the header
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # larger files are streamed uncompressed (read whole to compress: bounded)
WORTH = 0.9  # compressed to at most this share of the size, or not sent compressed
LEVEL = 6
CACHE_BYTES = 64 * 1024 * 1024  # compressed bodies kept in memory at most (oldest dropped first)
COMPRESSORS = 2  # files compressed at the same time at most

Key = tuple[str, int, int]
_cache: OrderedDict[Key, bytes | None] = OrderedDict()  # None: compressed once, not worth it
_busy: dict[Key, threading.Lock] = {}  # the key being compressed -> held by the thread compressing it
_lock = threading.Lock()
_slots = threading.Semaphore(COMPRESSORS)


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


def worth_trying(path: Path, size: int) -> bool:
    """True when a file of this type and size may be sent compressed."""
    return Path(path).suffix.lower() in COMPRESSIBLE and MIN_BYTES <= size <= MAX_SOURCE_BYTES


def gzipped(path: Path, f: BinaryIO) -> bytes | None:
    """The gzip body of ``path`` (open as ``f``), compressed once and kept; None when it is not worth it."""
    st = os.fstat(f.fileno())
    if not worth_trying(path, st.st_size):
        return None
    key = (str(path), st.st_mtime_ns, st.st_size)
    while True:
        with _lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
            busy = _busy.get(key)
            if busy is None:
                busy = _busy[key] = threading.Lock()
                busy.acquire()
                break
        with busy:  # another thread is compressing this file: wait for it, then read the cache
            pass
    try:
        packed = _compress(f, st.st_size)
        _keep(key, packed)
        return packed
    finally:
        with _lock:
            del _busy[key]
        busy.release()


def _compress(f: BinaryIO, size: int) -> bytes | None:
    with _slots:
        data = os.pread(f.fileno(), size, 0)
        if len(data) != size:  # changed while being read: not kept, sent as it is now
            return None
        packed = gzip.compress(data, LEVEL, mtime=0)
    return packed if len(packed) <= WORTH * size else None


def _keep(key: Key, packed: bytes | None) -> None:
    with _lock:
        _cache[key] = packed
        total = sum(len(v) for v in _cache.values() if v is not None)
        while total > CACHE_BYTES or len(_cache) > 4096:
            _, dropped = _cache.popitem(last=False)
            total -= len(dropped) if dropped is not None else 0
