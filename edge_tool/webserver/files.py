"""Which file of a demo site a request target names, and its MIME type: only files inside the site directory,
never via dot-dot segments, encoded separators, absolute-form targets, hidden names or symlinks that resolve
outside it."""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

from edge_tool.core.fsutil import is_within

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
    ".wasm": "application/wasm",
    ".bin": "application/octet-stream",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c|00)", re.IGNORECASE)


def content_type(path: Path) -> str:
    """MIME type the server sends for ``path``."""
    return MIME_TYPES.get(Path(path).suffix.lower(), "application/octet-stream")


def resolve_target(root: Path, target: str) -> tuple[int, Path | str | None]:
    """Map a request target to (200, file), (301, location) or (status, None) for 400/403/404; never leaves root."""
    if not target.startswith("/") or target.startswith("//"):
        return 404, None  # absolute-form (http://...) or network-path targets never name a site file
    path = target.split("?", 1)[0].split("#", 1)[0]
    if _ENCODED_SEPARATOR.search(path):
        return 404, None
    try:
        decoded = urllib.parse.unquote(path, errors="strict")
    except UnicodeDecodeError:
        return 404, None
    parts = decoded.split("/")[1:]
    if "\\" in decoded or "\x00" in decoded or any(p in (".", "..") for p in parts):
        return 403, None
    if any(p.startswith(".") for p in parts if p):
        return 404, None
    real_root = os.path.realpath(root)
    candidate = os.path.realpath(os.path.join(real_root, *[p for p in parts if p]))
    if not is_within(candidate, real_root):
        return 403, None  # a symlink pointing out of the site
    if os.path.isdir(candidate):
        if not decoded.endswith("/"):
            return 301, path + "/"
        index = os.path.realpath(os.path.join(candidate, "index.html"))
        if not is_within(index, real_root) or index == real_root:
            return 403, None
        candidate = index
    if not os.path.isfile(candidate):
        return 404, None
    return 200, Path(candidate)
