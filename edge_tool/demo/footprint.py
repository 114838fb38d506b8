"""What a demo site weighs: in all, and what a first visit downloads (the service worker's precache plus one wasm
build of each runtime, which it caches on first use: web_demo/sw.template.js)."""

from __future__ import annotations

import os
from pathlib import Path

from edge_tool.demo.vendor import ON_DEMAND_GROUPS
from edge_tool.webserver.compress import gzipped

VENDOR_SUBDIR = "vendor"


def on_demand_groups(files) -> list[list[tuple[str, ...]]]:
    """The site's on-demand groups (alternatives of which a browser fetches one), each with the builds it has."""
    have = set(files)
    groups = (
        [tuple(f"{VENDOR_SUBDIR}/{name}" for name in build) for build in builds] for builds in ON_DEMAND_GROUPS.values()
    )
    return [kept for kept in ([b for b in g if set(b) <= have] for g in groups) if kept]


def footprint(site: Path, files, packed=lambda path: path.stat().st_size) -> tuple[int, int]:
    """(bytes of the site's ``files``, bytes a first visit downloads at most: the precache plus the largest build of
    each on-demand group); ``packed(path)``: a file's size on the wire (default: as it is)."""
    size = {rel: packed(Path(site) / rel) for rel in files}
    groups = on_demand_groups(size)
    lazy = {rel for group in groups for build in group for rel in build}
    largest = sum(max(sum(size[rel] for rel in build) for build in group) for group in groups)
    return sum(size.values()), sum(n for rel, n in size.items() if rel not in lazy) + largest


def gzip_size(path: Path) -> int:
    """Bytes of ``path`` as `edgetool serve` sends it to a browser (gzipped when worth it)."""
    with open(path, "rb") as f:
        packed = gzipped(path, f)
        return len(packed) if packed is not None else os.fstat(f.fileno()).st_size
