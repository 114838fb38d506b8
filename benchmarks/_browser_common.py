"""Shared by the browser benchmarks: the Chromium binary and flags, a site served for the length of a block, and
percentiles."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from edge_tool.demo.serve import start_server

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def served(site: Path) -> Iterator[str]:
    """``site`` served by ``edge_tool.demo.serve.start_server`` on a free loopback port; yields its URL."""
    server, thread, url = start_server(site, "127.0.0.1", 0)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def pct(xs: list[float], q: float) -> float:
    """Percentile ``q`` (0..100) of ``xs``."""
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q))
